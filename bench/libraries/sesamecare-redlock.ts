// @sesamecare-oss/redlock: the maintained TypeScript fork of redlock v5 (ioredis defineCommand scripts).
import { Redlock, type Lock } from '@sesamecare-oss/redlock';
import { DRIFT_FACTOR, RETRY_COUNT, RETRY_DELAY, TTL } from '../config.js';
import type { LibraryContext, LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

export const settings = {
  client: 'ioredis',
  ttl: TTL,
  driftFactor: DRIFT_FACTOR,
  retryCount: RETRY_COUNT,
  retryDelay: RETRY_DELAY,
  retryJitter: RETRY_DELAY,
  automaticExtensionThreshold: 500,
  retryNote: `next attempt after retryDelay ± retryJitter, i.e. uniform in [0, ${2 * RETRY_DELAY}] ms; ${RETRY_COUNT} attempts cover the acquire timeout`,
  autoExtension: 'using([key], ttl, routine): extends when less than automaticExtensionThreshold ms are left',
};

export function create(ctx: LibraryContext): LockLibrary<Lock> {
  let redlock: Redlock | undefined;
  let clients: Awaited<ReturnType<typeof connectIoredis>> = [];
  const rl = (): Redlock => {
    if (!redlock) throw new Error('setup() first');
    return redlock;
  };
  return {
    name: '@sesamecare-oss/redlock',
    async setup(urls) {
      clients = await connectIoredis(urls);
      redlock = new Redlock(clients, {
        driftFactor: settings.driftFactor,
        retryCount: settings.retryCount,
        retryDelay: settings.retryDelay,
        retryJitter: settings.retryJitter,
        automaticExtensionThreshold: settings.automaticExtensionThreshold,
      });
    },
    acquire: (key) => rl().acquire([key], TTL),
    async release(lock) {
      await lock.release();
    },
    async holdWithAutoExtend(key, until, onHeld) {
      await rl().using([key], ctx.w5Ttl, async () => {
        onHeld();
        await until;
      });
    },
    close: () => closeIoredis(clients),
  };
}
