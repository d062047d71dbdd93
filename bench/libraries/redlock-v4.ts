// redlock@4.2.0: lock(resource, ttl) / lock.unlock(), callback-era API over ioredis. No auto-extension (W5: n/a).
import Redlock from 'redlock-v4';
import { TTL } from '../config.js';
import type { LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';
import { redlockRetrySettings } from './redlock-v5-api.js';

export const settings = { ...redlockRetrySettings, autoExtension: 'none' };

export function create(): LockLibrary<Redlock.Lock> {
  let redlock: Redlock | undefined;
  let clients: Awaited<ReturnType<typeof connectIoredis>> = [];
  return {
    name: 'redlock@4',
    async setup(urls) {
      clients = await connectIoredis(urls);
      redlock = new Redlock(clients, {
        driftFactor: settings.driftFactor,
        retryCount: settings.retryCount,
        retryDelay: settings.retryDelay,
        retryJitter: settings.retryJitter,
      });
      redlock.on('clientError', () => undefined);
    },
    async acquire(key) {
      if (!redlock) throw new Error('setup() first');
      return redlock.lock(key, TTL);
    },
    async release(lock) {
      await lock.unlock();
    },
    close: () => closeIoredis(clients),
  };
}
