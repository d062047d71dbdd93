// redlock-universal: createLock (single node, 'lean' performance mode) / createRedlock (5 nodes), one lock object
// per acquisition, ioredis adapters. Auto-extension with lock.using().
import { createLock, createRedlock, IoredisAdapter, type Lock, type LockHandle } from 'redlock-universal';
import { DRIFT_FACTOR, RETRY_COUNT, RETRY_DELAY, TTL } from '../config.js';
import type { LibraryContext, LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

export const settings = {
  client: 'ioredis (IoredisAdapter)',
  factories: "createLock({ performance: 'lean' }) single node, createRedlock() 5 nodes; a new lock object per acquisition",
  ttl: TTL,
  retryAttempts: RETRY_COUNT,
  retryDelay: RETRY_DELAY,
  clockDriftFactor: DRIFT_FACTOR,
  performance: "'lean' (single node; documented as the fastest mode, no circuit breaker)",
  retryNote: 'fixed retryDelay, no jitter (the library has none)',
  autoExtension: 'lock.using(routine): extends when less than 20% of the ttl is left',
  engines: 'declares node >= 22; run on the machine Node anyway',
};

interface Handle {
  lock: Lock;
  handle: LockHandle;
}

export function create(ctx: LibraryContext): LockLibrary<Handle> {
  let clients: Awaited<ReturnType<typeof connectIoredis>> = [];
  let adapters: IoredisAdapter[] = [];
  const lockFor = (key: string, ttl: number): Lock => {
    const [only] = adapters;
    const retry = { retryAttempts: settings.retryAttempts, retryDelay: settings.retryDelay };
    return adapters.length === 1 && only
      ? createLock({ adapter: only, key, ttl, performance: 'lean', ...retry })
      : createRedlock({ adapters, key, ttl, clockDriftFactor: settings.clockDriftFactor, ...retry });
  };
  return {
    name: 'redlock-universal',
    async setup(urls) {
      clients = await connectIoredis(urls);
      adapters = clients.map((c) => new IoredisAdapter(c));
    },
    async acquire(key) {
      const lock = lockFor(key, TTL);
      return { lock, handle: await lock.acquire() };
    },
    async release({ lock, handle }) {
      await lock.release(handle);
    },
    async holdWithAutoExtend(key, until, onHeld) {
      await lockFor(key, ctx.w5Ttl).using(async () => {
        onHeld();
        await until;
      });
    },
    close: () => closeIoredis(clients),
  };
}
