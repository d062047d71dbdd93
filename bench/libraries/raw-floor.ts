// The floor: the protocol's minimum with ioredis. SET NX PX to acquire, an EVALSHA compare-and-delete to release;
// with five nodes both fanned out in parallel with quorum counting, and a failed round released where it may have
// landed. Waiting: retry after a uniform random 0-10 ms delay (full jitter). No fencing, no notifications, no
// auto-extension (W5: n/a).
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { ACQUIRE_TIMEOUT, DRIFT_FACTOR, RETRY_DELAY, TTL } from '../config.js';
import type { LockLibrary } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const RELEASE_SHA = createHash('sha1').update(RELEASE).digest('hex');

export const settings = {
  client: 'ioredis',
  ttl: TTL,
  acquire: 'SET key token NX PX ttl (5 nodes: on all in parallel, quorum 3, validity = ttl - elapsed - drift > 0)',
  release: 'EVALSHA compare-and-delete (EVAL on NOSCRIPT); 5 nodes: all in parallel',
  failedRound: 'compare-and-delete on every node that did not answer a definite "not set"',
  retry: `uniform random delay in [0, ${RETRY_DELAY}] ms between rounds, until ${ACQUIRE_TIMEOUT} ms`,
  token: '16 random bytes, hex',
};

interface Handle {
  key: string;
  token: string;
}

export function create(): LockLibrary<Handle> {
  let clients: Redis[] = [];
  let quorum = 1;

  const compareAndDelete = (c: Redis, key: string, token: string): Promise<unknown> =>
    c.evalsha(RELEASE_SHA, 1, key, token).catch((e: unknown) => {
      if (e instanceof Error && e.message.startsWith('NOSCRIPT')) return c.eval(RELEASE, 1, key, token);
      throw e;
    });

  const tryOnce = async (key: string, token: string): Promise<boolean> => {
    const [only] = clients;
    if (clients.length === 1 && only) return (await only.set(key, token, 'PX', TTL, 'NX')) === 'OK';
    const start = performance.now();
    // true: set; false: definitely not set (someone else holds it); null: error, may or may not have landed
    const votes = await Promise.all(
      clients.map((c) =>
        c.set(key, token, 'PX', TTL, 'NX').then(
          (r) => r === 'OK',
          () => null,
        ),
      ),
    );
    const validity = TTL - (performance.now() - start) - (TTL * DRIFT_FACTOR + 2);
    if (votes.filter((v) => v === true).length >= quorum && validity > 0) return true;
    await Promise.all(clients.map((c, i) => (votes[i] === false ? undefined : compareAndDelete(c, key, token).catch(() => undefined))));
    return false;
  };

  return {
    name: 'raw-floor',
    async setup(urls) {
      clients = await connectIoredis(urls);
      quorum = Math.floor(clients.length / 2) + 1;
    },
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      const deadline = performance.now() + ACQUIRE_TIMEOUT;
      for (;;) {
        if (await tryOnce(key, token)) return { key, token };
        if (performance.now() >= deadline) throw new Error(`raw-floor: ${key} not acquired within ${ACQUIRE_TIMEOUT} ms`);
        await sleep(Math.random() * RETRY_DELAY);
      }
    },
    async release({ key, token }) {
      await Promise.all(clients.map((c) => compareAndDelete(c, key, token)));
    },
    close: () => closeIoredis(clients),
  };
}
