// Debian's `etcdctl lock` (package etcd-client) as a child process: etcd's own lock recipe
// (client/v3/concurrency.Mutex), the reference a fencelock lock on etcd must share its queue with.
// `etcdctl lock <name>` prints its key once it holds the lock, holds it until SIGTERM (then unlocks and
// exits) or SIGKILL (its session lease then ends on the server at its --ttl).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { requireComponent } from './optional.js';

const ETCDCTL = process.env.ETCDCTL ?? 'etcdctl';

/** Whether `etcdctl` runs (on PATH, or at $ETCDCTL). */
export function hasEtcdctl(): boolean {
  return spawnSync(ETCDCTL, ['version'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

/** The `skip` option of a suite that needs etcdctl. */
export const requireEtcdctl = (): false | string => requireComponent(hasEtcdctl(), 'etcdctl (the etcd interop tests)', 'etcd-client');

export interface EtcdctlLock {
  readonly child: ChildProcess;
  /** its key once it holds the lock (`<name>/<lease id in hex>`), when it printed it */
  readonly held: Promise<{ key: string; at: number }>;
  /** whether it printed its key yet */
  holds(): boolean;
  /** resolves when the process has exited */
  readonly exited: Promise<number | null>;
  /** everything it wrote, for failure messages */
  output(): string;
  /** SIGTERM: etcdctl unlocks (deletes its key) and exits; resolves at its exit */
  unlock(): Promise<number | null>;
}

/**
 * `etcdctl --endpoints <endpoints> lock <name> --ttl <ttlSeconds>`. `held` rejects if it exits without having
 * printed a key; a process still alive at the end of the test is the caller's to stop (`unlock()` or SIGKILL).
 */
export function etcdctlLock(endpoints: readonly string[], name: string, ttlSeconds = 10): EtcdctlLock {
  const child = spawn(ETCDCTL, ['--endpoints', endpoints.join(','), 'lock', name, `--ttl=${ttlSeconds}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  let out = '';
  let printed = false;
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const held = new Promise<{ key: string; at: number }>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const key = out.split('\n').find((line) => line.startsWith(`${name}/`));
      if (key && !printed) {
        printed = true;
        resolve({ key, at: performance.now() });
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    void exited.then((code) => reject(new Error(`etcdctl lock ${name} exited (${code}) without holding: ${out}`)));
  });
  held.catch(() => undefined); // a test that never awaits it (the process killed while waiting) is no unhandled rejection
  return {
    child,
    held,
    holds: () => printed,
    exited,
    output: () => out,
    unlock: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
