// redlock@4.2.0: lock(resource, ttl) / lock.unlock(), callback-era API over ioredis. No auto-extension (W5: n/a).
import Redlock from 'redlock-v4';
import { DRIFT_FACTOR, RETRY_COUNT, RETRY_DELAY, TTL } from '../config.js';
import type { LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

export const settings = {
  client: 'ioredis',
  ttl: TTL,
  driftFactor: DRIFT_FACTOR,
  retryCount: RETRY_COUNT,
  retryDelay: RETRY_DELAY,
  retryJitter: RETRY_DELAY,
  retryNote: `next attempt after retryDelay ± retryJitter, i.e. uniform in [0, ${2 * RETRY_DELAY}] ms; ${RETRY_COUNT} attempts cover the acquire timeout`,
  autoExtension: 'none',
};

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
