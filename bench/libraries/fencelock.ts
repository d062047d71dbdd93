// fencelock itself, as users get it: the built package (dist/esm, `npm run bench` builds it first), over
// ioredis or node-redis clients. FENCELOCK_BENCH_FROM_SOURCE=1 loads src/ instead (the test suite's smoke
// run, which must not depend on a build that another test rebuilds meanwhile).
import type { Lock, LockManager as Manager } from '../../src/index.js';

type Fencelock = typeof import('../../src/index.js');
const entry = process.env.FENCELOCK_BENCH_FROM_SOURCE ? '../../src/index.js' : '../../dist/esm/index.js';
const current = (): Promise<Fencelock> => import(entry) as Promise<Fencelock>;
import { ACQUIRE_TIMEOUT, DRIFT_FACTOR, NODE_TIMEOUT, RETRY_DELAY, TTL } from '../config.js';
import type { LibraryContext, LockLibrary } from '../types.js';
import { closeIoredis, closeNodeRedis, connectIoredis, connectNodeRedis } from './clients.js';

export const settings = {
  ttl: TTL,
  acquireTimeout: ACQUIRE_TIMEOUT,
  nodeTimeout: NODE_TIMEOUT,
  driftFactor: DRIFT_FACTOR,
  retry: { minDelay: RETRY_DELAY, maxDelay: 100, factor: 2, jitter: 'full' as const },
  waiting: 'release notifications (pub/sub) plus the retry backoff above',
  autoExtension: 'acquire(key, { ttl, autoExtend: true }): extends every ttl/3, extensions batched per node',
};

/** `load`: the fencelock build to measure (default: this one; bench/previous.ts: the previous release). */
export function createFencelock(
  client: 'ioredis' | 'node-redis',
  ctx: LibraryContext,
  load: () => Promise<Fencelock> = current,
  name = `fencelock/${client}`,
): LockLibrary<Lock> {
  let manager: Manager | undefined;
  let close: () => Promise<void> = async () => undefined;
  const locks = (): Manager => {
    if (!manager) throw new Error('setup() first');
    return manager;
  };
  return {
    name,
    async setup(urls, mode) {
      const { LockManager } = await load();
      if (mode === 'etcd3' || mode === 'zk3') {
        // The etcd and ZooKeeper backends take one URL and refuse the Redis-only options (nodeTimeout, driftFactor).
        manager = new LockManager(urls[0] as string, { ttl: TTL, acquireTimeout: ACQUIRE_TIMEOUT, retry: settings.retry });
        return;
      }
      const options = {
        ttl: TTL,
        acquireTimeout: ACQUIRE_TIMEOUT,
        nodeTimeout: NODE_TIMEOUT,
        driftFactor: DRIFT_FACTOR,
        retry: settings.retry,
      } as const;
      if (client === 'ioredis') {
        const clients = await connectIoredis(urls);
        manager = new LockManager(clients, options);
        close = () => closeIoredis(clients);
      } else {
        const clients = await connectNodeRedis(urls);
        manager = new LockManager(clients, options);
        close = () => closeNodeRedis(clients);
      }
    },
    acquire: (key) => locks().acquire(key),
    async release(lock) {
      await lock.release();
    },
    async holdWithAutoExtend(key, until, onHeld) {
      const lock = await locks().acquire(key, { ttl: ctx.w5Ttl, autoExtend: true });
      onHeld();
      await until;
      await lock.release();
    },
    async close() {
      await manager?.close();
      await close();
    },
  };
}
