// One lock-worker process (started by workers.ts): a contended read-modify-write
// under a lock (withLock, or the config's varied operations), fenced in the store, every holding
// recorded and sent to the parent; one loop per manager (config.variations), all at once.
// Runs `durationMs` from the parent's 'go', then exits by itself.
// argv: <worker id> <WorkloadConfig as JSON>
import { LockManager } from '../../../src/index.js';
import { consensusUrl } from '../../../src/cli/lock-store.js';
import { plantedFlaws } from '../../../src/redis/planted-flaws.js';
import { FencedStore } from './fenced-store.js';
import { encodeRecord } from './history.js';
import { Recorder } from './recorder.js';
import type { ParentMessage, WorkerMessage, WorkerStats, WorkloadConfig } from './workers.js';
import { armLeakWatchdog } from './leak-watchdog.js';
import { newHoldStats, runHoldLoop } from './hold-loop.js';
import { variedOps } from './ops.js';

const [id = 'worker', json = '{}'] = process.argv.slice(2);
const config = JSON.parse(json) as WorkloadConfig;
if (config.plantedFlaw === 'wakeup-grant') plantedFlaws.wakeupGrant = true;
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
  // Several managers in one process are several clients (their own connections, sessions and owner tokens) that
  // share its fate: a SIGSTOP of the process pauses them all at once. Each records as its own holder.
  const variations = config.variations ?? [undefined];
  const clients = variations.map((variation, k) => {
    const manager = cluster
      ? new LockManager(cluster, config.managerOptions)
      : new LockManager([...config.lockUrls], config.managerOptions);
    const holder = variations.length > 1 ? `${id}.m${k + 1}` : id;
    const recorder = new Recorder(manager, holder, (r) => void send({ type: 'record', line: encodeRecord(r) }));
    return { manager, holder, recorder, variation };
  });
  // The protected resource, not a lock client: one connection serves every manager.
  const store = new FencedStore(config.storageUrl, config.storePrefix);
  // One count for the process: the loops run on one thread, so sharing it needs no more than ++.
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

    const deadline = performance.now() + config.durationMs;
    await Promise.all(
      clients.map(({ recorder, holder, variation }) =>
        runHoldLoop({
          recorder,
          store,
          resources: config.resources,
          deadline,
          maxHolds: MAX_HOLDS,
          workMs: config.workMs ?? 3,
          lockOptions: config.lockOptions,
          ...(variation ? { nextOp: variedOps(variation, config.resources) } : {}),
          stats,
          onHolding: () => void send({ type: 'holding' }),
          onError: (error) => void send({ type: 'error', message: `${holder}: ${String(error)}` }),
        }),
      ),
    );
  } finally {
    for (const { recorder } of clients) recorder.close();
    await Promise.all(clients.map(({ manager }) => manager.close()));
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
