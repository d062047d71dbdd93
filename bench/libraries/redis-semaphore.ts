// redis-semaphore: Mutex (single node) and RedlockMutex (5 nodes), one mutex object per acquisition. ioredis.
import { Mutex, RedlockMutex } from 'redis-semaphore';
import { ACQUIRE_TIMEOUT, RETRY_DELAY, TTL } from '../config.js';
import type { LibraryContext, LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

export const settings = {
  client: 'ioredis',
  classes: 'Mutex (single node), RedlockMutex (5 nodes); a new object per acquisition',
  lockTimeout: TTL,
  acquireTimeout: ACQUIRE_TIMEOUT,
  retryInterval: RETRY_DELAY,
  acquireAttemptsLimit: 'Infinity (default)',
  refreshInterval: '0 in W1-W4 (plain acquire/release, like the other libraries); W5: default 0.8 x lockTimeout',
  retryNote: 'fixed retryInterval, no jitter (the library has none)',
  autoExtension: 'refreshInterval timer per mutex',
};

type AnyMutex = Mutex | RedlockMutex;

export function create(ctx: LibraryContext): LockLibrary<AnyMutex> {
  let clients: Awaited<ReturnType<typeof connectIoredis>> = [];
  const mutex = (key: string, lockTimeout: number, refreshInterval: number | undefined): AnyMutex => {
    const options = {
      lockTimeout,
      acquireTimeout: ACQUIRE_TIMEOUT,
      retryInterval: RETRY_DELAY,
      ...(refreshInterval === undefined ? {} : { refreshInterval }),
      onLockLost: () => undefined, // the default throws an unhandled LostLockError
    };
    const [only] = clients;
    return clients.length === 1 && only ? new Mutex(only, key, options) : new RedlockMutex(clients, key, options);
  };
  return {
    name: 'redis-semaphore',
    async setup(urls) {
      clients = await connectIoredis(urls);
    },
    async acquire(key) {
      const m = mutex(key, TTL, 0);
      await m.acquire();
      return m;
    },
    async release(m) {
      await m.release();
    },
    async holdWithAutoExtend(key, until, onHeld) {
      const m = mutex(key, ctx.w5Ttl, undefined);
      await m.acquire();
      try {
        onHeld();
        await until;
      } finally {
        await m.release();
      }
    },
    close: () => closeIoredis(clients),
  };
}
