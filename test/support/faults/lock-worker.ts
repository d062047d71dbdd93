// One lock-worker process (started by workers.ts): a contended read-modify-write
// under a lock (withLock, or the config's varied operations), fenced in the store, every holding
// recorded and sent to the parent. Runs `durationMs` from the parent's 'go', then exits by itself.
// argv: <worker id> <WorkloadConfig as JSON>
import { LockManager } from '../../../src/index.js';
import { consensusUrl } from '../../../src/cli/lock-store.js';
import { FencedStore } from './fenced-store.js';
import { encodeRecord } from './history.js';
import { Recorder } from './recorder.js';
import type { ParentMessage, WorkerMessage, WorkerStats, WorkloadConfig } from './workers.js';
import { armLeakWatchdog } from './leak-watchdog.js';
import { newHoldStats, runHoldLoop } from './hold-loop.js';
import { variedOps } from './ops.js';

const [id = 'worker', json = '{}'] = process.argv.slice(2);
const config = JSON.parse(json) as WorkloadConfig;
/** Loops are bounded in count as well as time, whatever the config says. */
const MAX_HOLDS = 100_000;
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

async function main(): Promise<void> {
  // An etcd cluster or a ZooKeeper ensemble comes as a one-entry list of its etcd:// or zk:// URL, which LockManager
  // takes as the string itself (as a list entry it would be read as a Redis node).
  const cluster = consensusUrl(config.lockUrls);
  const manager = cluster ? new LockManager(cluster, config.managerOptions) : new LockManager([...config.lockUrls], config.managerOptions);
  const store = new FencedStore(config.storageUrl, config.storePrefix);
  const recorder = new Recorder(manager, id, (r) => void send({ type: 'record', line: encodeRecord(r) }));
  const stats = newHoldStats() satisfies WorkerStats;
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

    await runHoldLoop({
      recorder,
      store,
      resources: config.resources,
      deadline: performance.now() + config.durationMs,
      maxHolds: MAX_HOLDS,
      workMs: config.workMs ?? 3,
      lockOptions: config.lockOptions,
      ...(config.variation ? { nextOp: variedOps(config.variation, config.resources) } : {}),
      stats,
      onHolding: () => void send({ type: 'holding' }),
      onError: (error) => void send({ type: 'error', message: `${id}: ${String(error)}` }),
    });
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
