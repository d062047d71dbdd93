// One demo worker process: sells units of one SKU under withLock until the stock is gone.
import { Redis } from 'ioredis';
import { LockLostError } from '../../index.js';
import { lockManager } from '../lock-store.js';
import type { ParentMessage, WorkerConfig, WorkerMessage } from './protocol.js';
import { FencedStock } from './store.js';

const send = (m: WorkerMessage): void => {
  process.send?.(m);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let freezeNext = false;

process.on('message', (m: ParentMessage) => {
  if (m.type === 'start') void run(m.config);
  if (m.type === 'freeze-next') freezeNext = true;
});
// The parent is gone (Ctrl-C, crash): do not linger.
process.on('disconnect', () => process.exit(0));

async function run(config: WorkerConfig): Promise<void> {
  const storage = new Redis(config.storageUrl, { maxRetriesPerRequest: 2 });
  const store = new FencedStock(storage, config.key);
  // etcd and ZooKeeper: the lease is theirs (nodeTimeout is for Redis nodes only).
  const locks = lockManager(config.lockUrls, { ttl: config.ttl, acquireTimeout: 60_000 }, { nodeTimeout: 100 });
  const id = config.id;
  try {
    for (let soldOut = false; !soldOut;) {
      const asked = performance.now();
      const hold = { waitMs: 0, acquiredAt: 0n, releasedAt: 0n, fence: 0n, sold: false, stale: false };
      let lost = false;
      // The critical section ends here; withLock's release follows at once.
      const ended = (result: boolean): boolean => {
        hold.releasedAt = process.hrtime.bigint();
        return result;
      };
      try {
        soldOut = await locks.withLock('sku:1', async (lock) => {
          hold.acquiredAt = process.hrtime.bigint();
          hold.waitMs = performance.now() - asked;
          hold.fence = lock.fence;
          send({ type: 'holding', worker: id, fence: lock.fence.toString() });
          const stock = await store.read();
          if (stock <= 0) return ended(true);
          if (freezeNext) {
            // Ask to be frozen right here, holding the lock, between read and write: the GC-pause scenario.
            freezeNext = false;
            send({ type: 'freeze-me', worker: id });
            await sleep(100);
          }
          await sleep(config.workMs);
          // No check of lock.signal here on purpose: the write goes out even if the lock was lost
          // meanwhile, as a paused process's write would. Fencing is what stops it.
          hold.sold = await store.write(stock - 1, lock.fence);
          hold.stale = !hold.sold;
          return ended(false);
        });
      } catch (error) {
        if (!(error instanceof LockLostError)) {
          // Quorum lost or a timeout while nodes are down: say so and try again shortly.
          send({ type: 'error', worker: id, message: (error as Error).message });
          await sleep(50);
          continue;
        }
        lost = true;
        send({ type: 'lost', worker: id, fence: hold.fence.toString() });
      }
      send({
        type: 'hold',
        worker: id,
        fence: hold.fence.toString(),
        waitMs: hold.waitMs,
        acquiredAt: hold.acquiredAt.toString(),
        releasedAt: (hold.releasedAt || process.hrtime.bigint()).toString(),
        sold: hold.sold,
        stale: hold.stale,
        lost,
      });
    }
  } finally {
    await locks.close();
    storage.disconnect();
    send({ type: 'done', worker: id });
    process.disconnect?.();
  }
}
