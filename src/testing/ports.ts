// Free loopback ports for our servers that no two of them share, in this process or in any other on the
// machine, and that the kernel never hands to anyone else between our choosing a port and the server binding it
// (a JVM takes a second or more to get there, and a restart() leaves the port unbound for a while).
//
// Two rules do it. (1) Ports come from outside the kernel's ephemeral range (ip_local_port_range): bind(0)
// and every outgoing connection take their local port from that range, so a port chosen there and let go
// (as a probe must, for the server to bind it) could be handed to another process, or be taken as the local
// port of some client's connection, before the server binds it. (2) A port is ours while we hold its lock file
// <tmpdir>/fencelock-ports/<port> (a hard link to a file holding our pid: link() fails if the port's file
// exists): every process using these helpers sees it, so concurrent test files never pick the same port. We
// remove our files on stop() and on exit; those of a process that is gone (SIGKILL) are swept after an hour.
//
// A developer's real servers' defaults (Redis 6379, its cluster bus 16379, Sentinel 26379; etcd 2379/2380;
// ZooKeeper 2181/2888/3888) are never handed out.
import { linkSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const HOST = '127.0.0.1';

const RESERVED_PORTS: readonly number[] = [6379, 2379, 2380, 2181, 2888, 3888];
const NEVER = new Set<number>([...RESERVED_PORTS, 16379, 26379]);
/** Below this, well-known services live (PostgreSQL 5432, 8080, …): we pick from here up. */
const LOWEST = 10_000;
/** The lock files of the ports in use by any process's servers. */
export const PORT_LOCK_DIR = path.join(os.tmpdir(), 'fencelock-ports');
/** A lock file of a dead process is swept once it is this old (a pid may be another namespace's). */
const STALE_MS = 60 * 60 * 1000;

/** Whether `port` is one a real server of a developer's machine would use by default. */
export const isReservedPort = (port: number): boolean => RESERVED_PORTS.includes(port);

/** The kernel's ephemeral range: Linux's own setting, else the IANA range most other systems use. */
function ephemeralRange(): readonly [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low as number, high as number];
  } catch {
    // not Linux
  }
  return [49_152, 65_535];
}
const [EPHEMERAL_LOW, EPHEMERAL_HIGH] = ephemeralRange();
const outsideEphemeral = (port: number): boolean => port < EPHEMERAL_LOW || port > EPHEMERAL_HIGH;

/** Ports whose lock file this process created (and so removes). */
const held = new Set<number>();
const lockFile = (port: number): string => path.join(PORT_LOCK_DIR, String(port));

function removeHeldSync(): void {
  for (const file of [...[...held].map(lockFile), ...(pidFile ? [pidFile] : [])]) {
    try {
      unlinkSync(file);
    } catch {
      // already gone
    }
  }
  held.clear();
  pidFile = undefined;
}

/** This process's pid in a file of its own, hard-linked as each lock file: a lock is never seen without its pid. */
let pidFile: string | undefined;
function ownPidFile(): string {
  if (pidFile === undefined) {
    mkdirSync(PORT_LOCK_DIR, { recursive: true });
    const file = path.join(PORT_LOCK_DIR, `pid-${process.pid}`);
    writeFileSync(file, `${process.pid}\n`);
    pidFile = file;
  }
  return pidFile;
}

/** Creates `port`'s lock file (link() fails if it exists); false if another holder (another process, or us) has it. */
function lock(port: number): boolean {
  if (held.has(port)) return false;
  try {
    linkSync(ownPidFile(), lockFile(port));
  } catch {
    return false;
  }
  if (held.size === 0) process.on('exit', removeHeldSync);
  held.add(port);
  return true;
}

function unlock(port: number): void {
  if (!held.delete(port)) return;
  try {
    unlinkSync(lockFile(port));
  } catch {
    // already gone
  }
  if (held.size === 0) {
    removeHeldSync(); // the pid file too
    process.off('exit', removeHeldSync);
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

let swept = false;
/** Once per process: removes the lock files of processes that are gone (killed before they could clean up). */
function sweepStaleLocks(): void {
  if (swept) return;
  swept = true;
  let names: string[];
  try {
    names = readdirSync(PORT_LOCK_DIR);
  } catch {
    return;
  }
  for (const name of names) {
    const file = path.join(PORT_LOCK_DIR, name);
    try {
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (Date.now() - statSync(file).mtimeMs > STALE_MS && !(Number.isInteger(pid) && pid > 0 && alive(pid))) unlinkSync(file);
    } catch {
      // removed by its owner or another sweeper meanwhile
    }
  }
}

/** Binds `port` on loopback and lets it go: whether nothing else holds it now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, HOST, () => srv.close(() => resolve(true)));
  });
}

/** A random port in [LOWEST, 65535] that the kernel never hands out by itself, with its companion too. */
function candidate(companionOffset: number | undefined): number | undefined {
  for (let i = 0; i < 1_000; i++) {
    const port = LOWEST + Math.floor(Math.random() * (65_536 - LOWEST));
    if (NEVER.has(port) || !outsideEphemeral(port)) continue;
    if (companionOffset === undefined) return port;
    const companion = port + companionOffset;
    if (companion <= 65_535 && !NEVER.has(companion) && outsideEphemeral(companion)) return port;
  }
  return undefined;
}

/** Locks `port` (and its companion) if both are free of other holders and bindable now. */
async function claim(port: number, companionOffset: number | undefined): Promise<boolean> {
  const companion = companionOffset === undefined ? undefined : port + companionOffset;
  if (!lock(port)) return false;
  if (companion !== undefined && !lock(companion)) {
    unlock(port);
    return false;
  }
  if ((await bindable(port)) && (companion === undefined || (await bindable(companion)))) return true;
  unlock(port);
  if (companion !== undefined) unlock(companion);
  return false;
}

/**
 * A free loopback port, ours until `releasePort`. `companionOffset`: the port at that offset is taken with it
 * (a Redis Cluster node's bus port, port + 10000).
 */
export async function freePort(companionOffset?: number): Promise<number> {
  sweepStaleLocks();
  for (let i = 0; i < 200; i++) {
    const port = candidate(companionOffset);
    if (port === undefined) break; // the ephemeral range covers (nearly) every port: nothing outside it to pick
    if (await claim(port, companionOffset)) return port;
  }
  throw new Error(
    `could not find a free loopback port outside the ephemeral range ${EPHEMERAL_LOW}-${EPHEMERAL_HIGH}` +
      `${companionOffset === undefined ? '' : ` with a free port at +${companionOffset}`} (locks in ${PORT_LOCK_DIR})`,
  );
}

/** Takes `port` (a fixed port a caller chose) as ours too, if no other process holds it. */
export function reservePort(port: number): void {
  if (!NEVER.has(port)) lock(port);
}

/** Gives `port` back: its lock file goes (if this process made it). */
export function releasePort(port: number): void {
  unlock(port);
}
