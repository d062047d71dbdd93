// One lock-worker process (started by workers.ts): a contended
// read-modify-write under withLock, fenced in the store, every holding
// recorded and sent to the parent. Runs `durationMs` from the parent's 'go', then exits by itself.
// argv: <worker id> <WorkloadConfig as JSON>
import { LockManager } from '../../../src/index.js';
import { FencedStore } from './fenced-store.js';
import { encodeRecord } from './history.js';
import { Recorder } from './recorder.js';
import type { ParentMessage, WorkerMessage, WorkerStats, WorkloadConfig } from './workers.js';
import { armLeakWatchdog } from './leak-watchdog.js';

const [id = 'worker', json = '{}'] = process.argv.slice(2);
const config = JSON.parse(json) as WorkloadConfig;
/** Loops are bounded in count as well as time, whatever the config says. */
const MAX_HOLDS = 100_000;
const MAX_ERROR_MESSAGES = 20;
const READY_TIMEOUT_MS = 60_000;

let finished = false;
// The parent is gone (crashed, killed): do not linger holding locks and connections.
process.on('disconnect', () => {
  if (!finished) process.exit(1);
});

/** Resolves once the message is handed to the IPC channel, so that nothing is lost at exit. */
function send(m: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(m, undefined, undefined, () => resolve());
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown): unknown => (e as { code?: unknown } | null)?.code;

async function main(): Promise<void> {
  const manager = new LockManager([...config.lockUrls], config.managerOptions);
  const store = new FencedStore(config.storageUrl, config.storePrefix);
  const recorder = new Recorder(manager, id, (r) => void send({ type: 'record', line: encodeRecord(r) }));
  const stats = { holds: 0, accepted: 0, rejected: 0, lost: 0, timeouts: 0, errors: 0 } satisfies WorkerStats;
  try {
    const go = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
      process.once('message', (m: ParentMessage) => {
        clearTimeout(timer);
        resolve(m.type === 'go');
      });
    });
    await send({ type: 'ready' });
    if (!(await go)) throw new Error(`no 'go' from the parent within ${READY_TIMEOUT_MS} ms`);

    const deadline = performance.now() + config.durationMs;
    for (let i = 0; i < MAX_HOLDS && performance.now() < deadline; i++) {
      const resource = config.resources[Math.floor(Math.random() * config.resources.length)]!;
      const left = Math.max(0, Math.floor(deadline - performance.now()));
      try {
        await recorder.withLock(
          resource,
          async (lock) => {
            void send({ type: 'holding' });
            const { value } = await store.read(resource);
            await sleep(config.workMs ?? 3);
            // No lock.signal check before writing, on purpose: a paused holder's write goes out late,
            // and the fence is what must stop it.
            if (await store.write(resource, Number(value ?? 0) + 1, lock.fence)) stats.accepted++;
            else stats.rejected++;
          },
          { ...config.lockOptions, timeout: Math.min(config.lockOptions?.timeout ?? left, left) },
        );
        stats.holds++;
      } catch (error) {
        const code = codeOf(error);
        if (code === 'LOCK_LOST') stats.lost++;
        else if (code === 'ACQUIRE_TIMEOUT') stats.timeouts++;
        else {
          // Nodes or the store failing under a fault: note it, back off a little, carry on.
          if (stats.errors++ < MAX_ERROR_MESSAGES) void send({ type: 'error', message: `${id}: ${String(error)}` });
          await sleep(10);
        }
      }
    }
  } finally {
    recorder.close();
    await manager.close();
    store.close();
    await send({ type: 'done', stats });
    finished = true;
    process.disconnect?.();
  }
  armLeakWatchdog(id);
}

main().catch((error: unknown) => {
  console.error(`${id}:`, error);
  process.exitCode = 1;
});
