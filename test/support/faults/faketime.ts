// Redis nodes whose clock runs fast or slow (libfaketime), for clock-drift tests.
//
// Why not commandPrefix ['faketime', '-f', ...]: (1) Debian's redis-server is
// linked against jemalloc, and libfaketime 0.9.10 deadlocks with jemalloc at
// startup ("Unexpected recursive calls to clock_gettime()", wolfcw/libfaketime#130),
// so the node never answers; (2) the `faketime` wrapper forks rather than execs,
// so kill()/pause() would signal the wrapper and a SIGKILL would orphan Redis.
// Instead `env` (which execs) preloads glibc's libc_malloc_debug, whose malloc
// shadows jemalloc's and breaks the recursion, then libfaketime itself.
import { accessSync, constants, readdirSync } from 'node:fs';
import path from 'node:path';
import { startRedisNode, type LocalRedisNode, type StartRedisOptions } from '../../../src/testing/index.js';

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function readable(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** Library dirs, multiarch ones (e.g. /usr/lib/x86_64-linux-gnu) included. */
function libDirs(): string[] {
  const roots = ['/usr/lib', '/lib', '/usr/lib64', '/lib64', '/usr/local/lib'];
  const multiarch = (root: string): string[] => {
    try {
      return readdirSync(root)
        .filter((d) => d.endsWith('-linux-gnu'))
        .map((d) => path.join(root, d));
    } catch {
      return [];
    }
  };
  return roots.flatMap((r) => [...multiarch(r), r]);
}

const find = (candidates: string[]): string | undefined => candidates.find(readable);

/** libfaketime.so.1 (override with LIBFAKETIME=/path). */
export function libfaketimePath(): string | undefined {
  if (process.env.LIBFAKETIME) return readable(process.env.LIBFAKETIME) ? process.env.LIBFAKETIME : undefined;
  return find(libDirs().map((d) => path.join(d, 'faketime', 'libfaketime.so.1')));
}

/** glibc >= 2.34's malloc shim; absent elsewhere, where Redis then needs a non-jemalloc build to run under libfaketime. */
const mallocShimPath = (): string | undefined => find(libDirs().map((d) => path.join(d, 'libc_malloc_debug.so.0')));

/** Whether the `faketime` package is installed: the binary on PATH and its preload library found. */
export function faketimeAvailable(): boolean {
  const onPath = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .some((d) => executable(path.join(d, 'faketime')));
  return onPath && libfaketimePath() !== undefined;
}

/** The commandPrefix that runs Redis with its clock at `rate` x real time, starting from the real time. */
export function faketimeCommandPrefix(rate: number): string[] {
  if (!Number.isFinite(rate) || rate <= 0) throw new RangeError(`rate must be a finite number > 0, got ${rate}`);
  const lib = libfaketimePath();
  if (!lib) throw new Error('libfaketime not found: apt-get install -y faketime (or set LIBFAKETIME)');
  const preload = [mallocShimPath(), lib, process.env.LD_PRELOAD].filter(Boolean).join(':');
  return ['env', `LD_PRELOAD=${preload}`, `FAKETIME=+0 x${rate}`];
}

/** A fresh node whose clock (TTLs, expiry, TIME) runs `rate` times as fast as real time. */
export function startDriftingNode(rate: number, opts: Omit<StartRedisOptions, 'commandPrefix'> = {}): Promise<LocalRedisNode> {
  return startRedisNode({ ...opts, commandPrefix: faketimeCommandPrefix(rate) });
}
