// The redlock v5 API, shared by redlock@5.0.0-beta.2 and its maintained fork @sesamecare-oss/redlock:
// acquire([resource], ttl) / lock.release(), auto-extension with using(). ioredis only.
import { DRIFT_FACTOR, RETRY_COUNT, RETRY_DELAY, TTL } from '../config.js';
import type { LibraryContext, LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

type Clients = Awaited<ReturnType<typeof connectIoredis>>;

/** What both packages' Redlock class offers (their own types differ only in where they come from). */
export interface RedlockV5<L> {
  acquire(resources: string[], ttl: number): Promise<L>;
  using(resources: string[], ttl: number, routine: () => Promise<void>): Promise<void>;
  on(event: 'error', listener: () => void): unknown;
}

export interface RedlockV5Options {
  driftFactor: number;
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  automaticExtensionThreshold: number;
}

/** The retry settings every redlock generation (v4, v5, the fork) gets: the same names and meaning in all. */
export const redlockRetrySettings = {
  client: 'ioredis',
  ttl: TTL,
  driftFactor: DRIFT_FACTOR,
  retryCount: RETRY_COUNT,
  retryDelay: RETRY_DELAY,
  retryJitter: RETRY_DELAY,
  retryNote: `next attempt after retryDelay ± retryJitter, i.e. uniform in [0, ${2 * RETRY_DELAY}] ms; ${RETRY_COUNT} attempts cover the acquire timeout`,
};

export const v5Settings = {
  ...redlockRetrySettings,
  automaticExtensionThreshold: 500,
  autoExtension: 'using([key], ttl, routine): extends when less than automaticExtensionThreshold ms are left',
};

/**
 * A LockLibrary over a v5-style Redlock. `quietErrors`: attach an 'error' listener (beta.2 emits one per
 * refused vote and would crash the process without one).
 */
export function createV5<L extends { release(): Promise<unknown> }>(
  name: string,
  make: (clients: Clients, options: RedlockV5Options) => RedlockV5<L>,
  ctx: LibraryContext,
  quietErrors: boolean,
): LockLibrary<L> {
  let redlock: RedlockV5<L> | undefined;
  let clients: Clients = [];
  const rl = (): RedlockV5<L> => {
    if (!redlock) throw new Error('setup() first');
    return redlock;
  };
  return {
    name,
    async setup(urls) {
      clients = await connectIoredis(urls);
      const { driftFactor, retryCount, retryDelay, retryJitter, automaticExtensionThreshold } = v5Settings;
      redlock = make(clients, { driftFactor, retryCount, retryDelay, retryJitter, automaticExtensionThreshold });
      if (quietErrors) redlock.on('error', () => undefined);
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
