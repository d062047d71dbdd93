// One soak-worker process: `users` concurrent lock users (async loops) sharing one
// LockManager, each a fenced read-modify-write under withLock, every holding
// recorded to the parent. Reports its heap and active handles before and after,
// and any unhandled rejection or uncaught exception. Exits by itself once closed.
// Run with --expose-gc. argv: <worker id> <SoakConfig as JSON>
import { LockManager, type LockManagerOptions } from '../../src/index.js';
import { encodeRecord, FencedStore, Recorder } from '../support/faults/index.js';
import { armLeakWatchdog } from '../support/faults/leak-watchdog.js';
import { newHoldStats, runHoldLoop, type HoldStats } from '../support/faults/hold-loop.js';

export interface SoakConfig {
  readonly lockUrls: readonly string[];
  readonly storageUrl: string;
  readonly storePrefix: string;
  readonly resources: readonly string[];
  readonly users: number;
  readonly durationMs: number;
  readonly workMs: number;
  readonly acquireTimeout: number;
  readonly managerOptions: LockManagerOptions;
}

export type SoakStats = HoldStats;

export interface SoakReport {
  readonly stats: SoakStats;
  readonly heapBefore: number;
  readonly heapAfter: number;
  readonly handlesBefore: string[];
  readonly handlesAfter: string[];
}

export type SoakMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'records'; readonly lines: string[] }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'error'; readonly message: string }
  | { readonly type: 'report'; readonly report: SoakReport };

const [id = 'soak', json = '{}'] = process.argv.slice(2);
const config = JSON.parse(json) as SoakConfig;
const MAX_HOLDS_PER_USER = 100_000;
const READY_TIMEOUT_MS = 60_000;
const FLUSH_MS = 50;
const HANDLES_SETTLE_MS = 3_000;

function send(m: SoakMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(m, undefined, undefined, () => resolve());
  });
}
process.on('unhandledRejection', (reason) => void send({ type: 'fatal', message: `${id} unhandledRejection: ${String(reason)}` }));
process.on('uncaughtException', (error) => {
  void send({ type: 'fatal', message: `${id} uncaughtException: ${String(error?.stack ?? error)}` });
  process.exitCode = 1;
});
let finished = false;
process.on('disconnect', () => {
  if (!finished) process.exit(1);
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const handles = (): string[] => process.getActiveResourcesInfo().sort();

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function main(): Promise<void> {
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') throw new Error('run the soak worker with --expose-gc');
  const go = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
    process.once('message', (m: { type: string }) => {
      clearTimeout(timer);
      resolve(m.type === 'go');
    });
    void send({ type: 'ready' });
  });
  if (!go) throw new Error(`no 'go' from the parent within ${READY_TIMEOUT_MS} ms`);
  const handlesBefore = handles();
  const heapBefore = heap();

  const stats: SoakStats = newHoldStats();
  let batch: string[] = [];
  const flush = (): Promise<void> => {
    if (batch.length === 0) return Promise.resolve();
    const lines = batch;
    batch = [];
    return send({ type: 'records', lines });
  };
  const flusher = setInterval(() => void flush(), FLUSH_MS);
  const manager = new LockManager([...config.lockUrls], config.managerOptions);
  const store = new FencedStore(config.storageUrl, config.storePrefix);
  const recorder = new Recorder(manager, id, (r) => batch.push(encodeRecord(r)));
  try {
    const deadline = performance.now() + config.durationMs;
    const user = (): Promise<void> =>
      runHoldLoop({
        recorder,
        store,
        resources: config.resources,
        deadline,
        maxHolds: MAX_HOLDS_PER_USER,
        workMs: config.workMs,
        lockOptions: { timeout: config.acquireTimeout },
        stats,
        onError: (error) => void send({ type: 'error', message: `${id}: ${String(error)}` }),
      });
    await Promise.all(Array.from({ length: config.users }, user));
  } finally {
    recorder.close();
    await manager.close();
    store.close();
    clearInterval(flusher);
    await flush();
  }
  // Closed sockets leave the handle list on a later tick: wait (bounded) for the set to settle back.
  const same = (a: string[], b: string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  const settleEnd = performance.now() + HANDLES_SETTLE_MS;
  while (!same(handles(), handlesBefore) && performance.now() < settleEnd) await sleep(20);
  const report: SoakReport = { stats, heapBefore, heapAfter: heap(), handlesBefore, handlesAfter: handles() };
  await send({ type: 'report', report });
  finished = true;
  process.disconnect?.();
  armLeakWatchdog(id);
}

main().catch((error: unknown) => {
  console.error(`${id}:`, error);
  void send({ type: 'fatal', message: `${id}: ${String(error)}` });
  process.exitCode = 1;
});
