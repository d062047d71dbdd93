// What every throw-away server of fencelock/testing shares: the binary found on PATH or in an env var,
// children signalled only through their own PIDs, a pause() that returns once the process has really stopped,
// and no child outliving this process however it ends. Their ports come from ports.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, rmSync } from 'node:fs';
import path from 'node:path';
import { allThreadsStopped, listenerOf } from './linux-proc.js';
import { HOST } from './ports.js';

export { HOST };
/** how long a signalled child may take to exit before SIGKILL (and then before we give up) */
export const KILL_WAIT_MS = 5_000;
/** how long a SIGSTOPped child may take until every one of its threads has stopped */
const STOP_WAIT_MS = 5_000;
const napCell = new Int32Array(new SharedArrayBuffer(4));
/** Sleeps `ms` without returning to the event loop (pause() stays synchronous, as it always was). */
const nap = (ms: number): void => void Atomics.wait(napCell, 0, 0, ms);

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
 * One server's child process, whichever server it is: started with its early errors in `<dir>/stderr.log`,
 * reaped if this process exits, signalled only through its own PID. `what` names it in errors
 * (`redis node redis://127.0.0.1:7001`, `etcd member m0`).
 */
export class ServerProcess {
  #child: ChildProcess | undefined;
  #paused = false;
  /** `<pid>:<port>` pairs seen listening (answeredOn) */
  readonly #ownListeners = new Set<string>();
  /** why the last start could not run the binary at all (ENOENT, EACCES), if so */
  spawnError: Error | undefined;

  constructor(private readonly what: string) {}

  /** the process id while it runs */
  get pid(): number | undefined {
    return isAlive(this.#child) ? this.#child.pid : undefined;
  }

  /** whether the process is alive (paused included) */
  isRunning(): boolean {
    return isAlive(this.#child);
  }

  /** whether it is stopped by SIGSTOP */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Starts `cmd args`; resolves with the child once it has a pid or failed to run (spawnError).
   * Errors printed before the server opens its own log (bad arguments, a missing wrapper) go to a file,
   * not a pipe: nothing to drain, nothing holding our event loop.
   */
  async start(cmd: string, args: readonly string[], dir: string): Promise<ChildProcess> {
    if (isAlive(this.#child)) throw new Error(`${this.what} is already running`);
    const errFd = openSync(path.join(dir, 'stderr.log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(cmd, args, { stdio: ['ignore', errFd, errFd] });
    } finally {
      closeSync(errFd);
    }
    this.spawnError = undefined;
    child.on('error', (e) => (this.spawnError = e));
    if (child.pid === undefined) await new Promise((resolve) => setImmediate(resolve)); // 'error' comes on next tick
    if (child.pid !== undefined) track(child, dir);
    this.#child = child;
    this.#paused = false;
    return child;
  }

  /** Default SIGKILL: a crash. Resolves once the process is really gone; SIGKILL if `signal` is not enough. */
  async kill(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (isAlive(child)) {
      // A stopped process only acts on SIGTERM once continued; SIGKILL works regardless.
      if (signal === 'SIGTERM' && this.#paused) child.kill('SIGCONT');
      child.kill(signal);
      if (!(await exited(child, KILL_WAIT_MS))) {
        child.kill('SIGKILL');
        if (!(await exited(child, KILL_WAIT_MS))) throw new Error(`${this.what} (pid ${child.pid}) did not exit after SIGKILL`);
      }
    }
    this.#child = undefined;
    this.#paused = false;
  }

  /**
   * SIGSTOP: hung (connections stay open, nothing answers). Returns once every thread has stopped (Linux; a
   * few ms at most): kill() returns before that, and a JVM stopped that way was seen answering a request sent
   * right after it (11 of 60 pauses beside two busy loops; test/testing/zookeeper-ensemble.test.ts checks it).
   */
  pause(): void {
    this.#signal('SIGSTOP');
    this.#paused = true;
    const pid = this.#child?.pid as number;
    const deadline = Date.now() + STOP_WAIT_MS;
    // Bounded by the deadline; each pass reads /proc/<pid>/task/*/stat, then sleeps 1 ms.
    while (allThreadsStopped(pid) === false) {
      if (Date.now() > deadline) throw new Error(`${this.what} (pid ${pid}) did not stop within ${STOP_WAIT_MS} ms of SIGSTOP`);
      nap(1);
    }
  }

  /** SIGCONT: a paused server answers again. */
  resume(): void {
    this.#signal('SIGCONT');
    this.#paused = false;
  }

  /**
   * After an answer on loopback `port`: whether this process gave it. False when it is not running (killed
   * meanwhile) or nobody listens there any more; true where /proc cannot tell (not Linux). Throws when another
   * process listens on the port: the port was handed out twice, and what answered is not this server.
   */
  answeredOn(port: number): boolean {
    const pid = this.pid;
    if (pid === undefined) return false;
    // Once seen listening, a server keeps its socket while it runs: /proc is read once per start and port.
    if (this.#ownListeners.has(`${pid}:${port}`)) return true;
    const who = listenerOf(pid, port);
    if (who === 'own') this.#ownListeners.add(`${pid}:${port}`);
    if (who === 'other')
      throw new Error(
        `${this.what} (pid ${pid}): another process listens on ${HOST}:${port} and answered in its place: the port was ` +
          'taken twice (or a commandPrefix forks the server instead of exec-ing it)',
      );
    return who !== 'none';
  }

  #signal(signal: NodeJS.Signals): void {
    if (!isAlive(this.#child)) throw new Error(`${this.what} is not running`);
    this.#child.kill(signal);
  }
}

/**
 * What every local server of fencelock/testing (a Redis node, an etcd member, a ZooKeeper server) offers over
 * its process: its PID, and the process faults a test injects. Each signal goes to its own PID only.
 */
export abstract class LocalServer {
  /** @internal the server's process */
  protected readonly process: ServerProcess;
  /** the last kill, restart or stop called, settled: the next one starts after it (serially) */
  #lifecycle: Promise<unknown> = Promise.resolve();

  /** `what` names the server in errors (`redis node redis://127.0.0.1:7001`, `etcd member m0`). */
  protected constructor(what: string) {
    this.process = new ServerProcess(what);
  }

  /** the process id while it runs */
  get pid(): number | undefined {
    return this.process.pid;
  }

  /** whether the process is alive (paused included) */
  isRunning(): boolean {
    return this.process.isRunning();
  }

  /** whether it is stopped by `pause()` */
  get paused(): boolean {
    return this.process.paused;
  }

  /**
   * Default SIGKILL: a crash, nothing flushed. Resolves once the process is really gone; its data dir stays.
   * Called while a restart runs, it waits for that restart and kills what it started.
   */
  kill(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    return this.serially(() => this.process.kill(signal));
  }

  /**
   * @internal Runs a server's kill, restart and stop calls one after another, in call order (each subclass's own steps
   * go through here and use `process.kill()` inside). Overlapping, they undid each other: a second restart()
   * killed the server the first was still waiting on, and the first's clean-up then killed the second's
   * (a Redis node's "failed to start: exited with SIGKILL" for both; a chaos schedule restarting nodes twice
   * within 0.6 s met it on a loaded machine).
   */
  protected serially(op: () => Promise<void>): Promise<void> {
    const done = this.#lifecycle.then(op);
    this.#lifecycle = done.catch(() => undefined);
    return done;
  }

  /** SIGSTOP: a hung server (connections stay open, nothing answers). */
  pause(): void {
    this.process.pause();
  }

  /** SIGCONT: a paused server answers again. */
  resume(): void {
    this.process.resume();
  }
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
