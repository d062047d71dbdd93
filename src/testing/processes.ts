// What every throw-away server of fencelock/testing shares: free loopback ports that parallel starts never
// share (and never a developer's real server: 6379, 2379, 2380), the binary found on PATH or in an env var,
// children signalled only through their own PIDs, and no child outliving this process however it ends.
import { type ChildProcess } from 'node:child_process';
import { accessSync, constants, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const HOST = '127.0.0.1';
/** how long a signalled child may take to exit before SIGKILL (and then before we give up) */
export const KILL_WAIT_MS = 5_000;

// Live children (and their dirs), so that however this process ends, no server outlives it.
const live = new Map<ChildProcess, string>();
const onSignal = (signal: NodeJS.Signals): void => {
  // Another listener means the app owns shutdown (and may still need the servers);
  // the 'exit' hook reaps them anyway. Alone, we stand in for Node's default exit.
  if (process.listenerCount(signal) > 1) return;
  killAllSync();
  process.exit(signal === 'SIGINT' ? 130 : 143);
};
function killAllSync(): void {
  for (const [child, dir] of live) {
    try {
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort: we are exiting
    }
  }
}

/** Reap `child` (and remove `dir`) if this process exits while it still runs. */
export function track(child: ChildProcess, dir: string): void {
  if (live.size === 0) {
    // Signal handles are unref'd by Node, so none of these keep the event loop alive.
    process.on('exit', killAllSync);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  live.set(child, dir);
  child.once('exit', () => {
    live.delete(child);
    if (live.size === 0) {
      process.off('exit', killAllSync);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });
}

/** Whether `c` is a started process that has not exited (no pid: spawn failed). */
export const isAlive = (c: ChildProcess | undefined): c is ChildProcess =>
  c?.pid !== undefined && c.exitCode === null && c.signalCode === null;
export const sleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves true once `c` has exited, false after `ms`. */
export const exited = (c: ChildProcess, ms: number): Promise<boolean> =>
  new Promise<boolean>((resolve) => {
    if (!isAlive(c)) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    c.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });

/**
 * Signals `child` through its own PID and waits until it is gone; SIGKILL if `signal` is not enough.
 * `paused`: the child was SIGSTOPped, and only acts on SIGTERM once continued (SIGKILL works regardless).
 */
export async function killChild(
  child: ChildProcess | undefined,
  signal: 'SIGKILL' | 'SIGTERM',
  paused: boolean,
  what: string,
): Promise<void> {
  if (!isAlive(child)) return;
  if (signal === 'SIGTERM' && paused) child.kill('SIGCONT');
  child.kill(signal);
  if (await exited(child, KILL_WAIT_MS)) return;
  child.kill('SIGKILL');
  if (!(await exited(child, KILL_WAIT_MS))) throw new Error(`${what} pid ${child.pid} did not exit after SIGKILL`);
}

/** The first executable of `$envVar`, else `name` on PATH; undefined if there is none. */
export function findBinary(envVar: string, name: string): { file: string | undefined; fromEnv: string | undefined } {
  const fromEnv = process.env[envVar];
  const candidates = fromEnv
    ? [fromEnv]
    : (process.env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((d) => path.join(d, name));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return { file, fromEnv };
    } catch {
      // try the next one
    }
  }
  return { file: undefined, fromEnv };
}

// Ports our own servers hold, so parallel starts never share one; the defaults of a developer's real Redis
// (6379, its cluster bus 16379) and etcd (2379 client, 2380 peer) are never handed out.
const takenPorts = new Set<number>([6379, 16379, 2379, 2380]);

/** Whether `port` is one a real server of a developer's machine would use by default. */
export const isReservedPort = (port: number): boolean => [6379, 2379, 2380].includes(port);

export function reservePort(port: number): void {
  takenPorts.add(port);
}

export function releasePort(port: number): void {
  if (!isReservedPort(port) && port !== 16379) takenPorts.delete(port);
}

/** Binds `port` (0: any) on loopback and gives it back: the port the OS chose, or undefined if it is in use. */
function probePort(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, HOST, () => {
      const { port: bound } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * A free loopback port, reserved at once. `companionOffset`: the port at that offset must be free too, and
 * is reserved with it (a Redis Cluster node's bus port, port + 10000, below 65536).
 */
export async function freePort(companionOffset?: number): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await probePort(0);
    if (port === undefined) throw new Error('could not bind any loopback port');
    if (takenPorts.has(port)) continue;
    if (companionOffset !== undefined) {
      const companion = port + companionOffset;
      if (companion > 65535 || takenPorts.has(companion) || (await probePort(companion)) === undefined) continue;
      if (takenPorts.has(port)) continue; // taken by a parallel start while we probed the companion
      takenPorts.add(companion);
    }
    takenPorts.add(port);
    return port;
  }
  throw new Error(`could not find a free loopback port${companionOffset === undefined ? '' : ` with a free port at +${companionOffset}`}`);
}
