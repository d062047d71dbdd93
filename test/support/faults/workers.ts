// Lock-worker processes for the reliability suite: N real processes contending
// for locks, each streaming its history to this (parent) process over IPC.
import { spawn, type ChildProcess } from 'node:child_process';
import type { LockManagerOptions, WithLockOptions } from '../../../src/index.js';
import { tsEntry } from '../entry.js';
import { decodeRecord, type HistoryRecord } from './history.js';
import type { HoldStats } from './hold-loop.js';
import type { OpVariation } from './ops.js';
import { REPO_ROOT } from '../repo.js';

const WORKER_FILE = 'test/support/faults/lock-worker.ts';
/** `--import tsx` and WORKER_FILE resolve from the working directory: run workers from the repository root. */
const OUTPUT_TAIL = 16_384;

/** What every worker runs; JSON-safe, since it travels on the command line. */
export interface WorkloadConfig {
  readonly lockUrls: readonly string[];
  readonly storageUrl: string;
  /** each holding picks one at random */
  readonly resources: readonly string[];
  /** ms from the common start signal until a worker stops taking locks */
  readonly durationMs: number;
  /** ms between the store read and the fenced write (default 3) */
  readonly workMs?: number;
  readonly managerOptions?: LockManagerOptions;
  /** per-holding withLock options; `timeout` is capped by the time left */
  readonly lockOptions?: Omit<WithLockOptions, 'signal'>;
  /**
   * One LockManager per entry, each with its own connections and its own concurrent loop drawing each operation's
   * kind, resources, ttl, timeout, work and flags from that seeded PRNG (overrides workMs and lockOptions).
   * Absent: one manager, withLock only.
   */
  readonly variations?: readonly OpVariation[];
  /** key prefix in the fenced store (default FencedStore's) */
  readonly storePrefix?: string;
  /** a flaw planted in the library for this run (src/redis/planted-flaws.ts; chaos --unsafe only) */
  readonly plantedFlaw?: 'wakeup-grant';
}

/** What a worker counted over its run, all its managers together (see hold-loop.ts). */
export type WorkerStats = Readonly<HoldStats>;

/** Messages between parent and worker (IPC, JSON). */
export type WorkerMessage =
  | { readonly type: 'ready' }
  /** sent as a critical section starts, so a test can freeze a worker while it holds a lock */
  | { readonly type: 'holding' }
  | { readonly type: 'record'; readonly line: string }
  | { readonly type: 'error'; readonly message: string }
  | { readonly type: 'done'; readonly stats: WorkerStats };
export type ParentMessage = { readonly type: 'go' };

export interface WorkerExit {
  readonly id: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface LockWorker {
  readonly id: string;
  readonly pid: number;
  /** history records received so far */
  readonly records: HistoryRecord[];
  /** error messages the worker reported (bounded by the worker) */
  readonly errors: string[];
  /** set when the worker finished its loop */
  readonly stats: WorkerStats | undefined;
  readonly exited: Promise<WorkerExit>;
  /** its process has not exited yet */
  readonly running: boolean;
  /** the tail of its stdout and stderr, for failure messages */
  output(): string;
  /** resolves when the worker next reports that it holds a lock (rejects after `timeoutMs`) */
  nextHolding(timeoutMs?: number): Promise<void>;
}

export interface WorkerPool {
  readonly workers: readonly LockWorker[];
  /** every worker's records so far */
  records(): HistoryRecord[];
  /** Waits for all to exit by themselves; past `timeoutMs` the rest are SIGKILLed (exit then shows the signal). */
  wait(timeoutMs?: number): Promise<WorkerExit[]>;
  /** SIGKILL, by PID, every worker still running; idempotent. */
  stop(): Promise<void>;
}

class Worker implements LockWorker {
  readonly records: HistoryRecord[] = [];
  readonly errors: string[] = [];
  stats: WorkerStats | undefined;
  readonly exited: Promise<WorkerExit>;
  readonly ready: Promise<void>;
  #out = '';
  readonly #holding: Array<() => void> = [];

  constructor(
    readonly id: string,
    readonly child: ChildProcess,
  ) {
    const keep = (d: Buffer): void => {
      this.#out = (this.#out + d.toString()).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ id, code, signal })));
    this.ready = new Promise((resolve, reject) => {
      child.once('exit', (code, signal) => reject(new Error(`worker ${id} exited (${signal ?? code}) before it was ready\n${this.#out}`)));
      child.on('message', (m: WorkerMessage) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'holding') this.#holding.splice(0).forEach((wake) => wake());
        else if (m.type === 'record') this.#record(m.line);
        else if (m.type === 'error') this.errors.push(m.message);
        else if (m.type === 'done') this.stats = m.stats;
      });
    });
    this.ready.catch(() => undefined); // observed by startWorkers; a late exit must not be unhandled
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  output(): string {
    return this.#out;
  }

  nextHolding(timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${this.id} reported no holding within ${timeoutMs} ms`)), timeoutMs);
      this.#holding.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #record(line: string): void {
    try {
      this.records.push(decodeRecord(line));
    } catch (error) {
      this.errors.push(`unreadable record from ${this.id}: ${(error as Error).message}`);
    }
  }
}

function bounded<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Starts `count` workers (`config` may differ per worker: a function of its index), waits until every one is connected and ready (bounded
 * by `readyTimeoutMs`), then starts them together so their run times overlap.
 */
export async function startWorkers(
  count: number,
  config: WorkloadConfig | ((index: number) => WorkloadConfig),
  opts: { readyTimeoutMs?: number } = {},
): Promise<WorkerPool> {
  const workers = Array.from({ length: count }, (_, i) => {
    const id = `w${i + 1}`;
    const own = typeof config === 'function' ? config(i) : config;
    const child = spawn(process.execPath, [...tsEntry(WORKER_FILE), id, JSON.stringify(own)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.on('error', () => undefined); // a failed spawn shows as an exit before ready
    return new Worker(id, child);
  });
  const pool: WorkerPool = {
    workers,
    records: () => workers.flatMap((w) => w.records),
    async wait(timeoutMs = 30_000) {
      const all = Promise.all(workers.map((w) => w.exited));
      if ((await bounded(all, timeoutMs)) === 'timeout') await pool.stop();
      return all;
    },
    async stop() {
      for (const w of workers) if (w.running) w.child.kill('SIGKILL');
      await Promise.all(workers.map((w) => w.exited));
    },
  };
  const ready = await bounded(Promise.all(workers.map((w) => w.ready)), opts.readyTimeoutMs ?? 30_000).catch((e: Error) => e);
  if (ready !== 'timeout' && !(ready instanceof Error)) {
    for (const w of workers) w.child.send({ type: 'go' } satisfies ParentMessage);
    return pool;
  }
  await pool.stop();
  throw ready === 'timeout'
    ? new Error(`workers not ready within ${opts.readyTimeoutMs ?? 30_000} ms\n${workers.map((w) => w.output()).join('\n')}`)
    : ready;
}

/** SIGSTOP the worker's own PID: a stop-the-world pause (GC, VM freeze) while it may hold a lock. */
export function freeze(worker: LockWorker): void {
  // Only a running worker: an exited one's PID may already belong to someone else.
  if (!worker.running) throw new Error(`worker ${worker.id} is not running`);
  process.kill(worker.pid, 'SIGSTOP');
}

/** SIGCONT: the worker carries on as if no time had passed, which is the point. */
export function thaw(worker: LockWorker): void {
  if (worker.running) process.kill(worker.pid, 'SIGCONT');
}
