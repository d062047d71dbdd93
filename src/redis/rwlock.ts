import { randomBytes } from 'node:crypto';
import { nameKeys, releaseOn, type HoldRequest, type NameKeys, type RoundHost } from './quorum-round.js';
import { queueLease } from './wait.js';
import { scripts } from './scripts/index.js';

/**
 * A read-write lock's keys, next to the name's fence hash and release channel:
 *
 *   <prefix>{<name>}:readers       sorted set: reader token -> lease end (node ms)
 *   <prefix>{<name>}:writer        string: the writer's token, lease as PX
 *   <prefix>{<name>}:write-intent  sorted set: waiting writer's token -> end of its intent's lease
 */
export interface RwKeys extends NameKeys {
  readonly readers: string;
  readonly writer: string;
  readonly intents: string;
}

export function rwKeys(prefix: string, name: string): RwKeys {
  const keys = nameKeys(prefix, name);
  return { ...keys, readers: `${keys.base}:readers`, writer: `${keys.base}:writer`, intents: `${keys.base}:write-intent` };
}

/**
 * The rounds of one read or write call. A waiting writer's refused rounds
 * register its write intent, leased for as long as a fair mutex waiter keeps
 * its place (it renews it at every round, at least every retry.maxDelay); the
 * intent keeps new readers out. A writer that gives up withdraws it.
 */
export function rwRequest(host: RoundHost, keys: RwKeys, mode: 'read' | 'write'): HoldRequest {
  const timeout = host.redlock.options.nodeTimeout;
  const held = mode === 'read' ? keys.readers : keys.writer;
  const kind = mode === 'read' ? 'zset' : 'string';
  return {
    keys,
    round: (token, o) => ({
      keys,
      token,
      ttl: o.ttl,
      leaderFirst: false,
      ask: (node, marker, _slot, wantAge) =>
        node.run(
          scripts.rwlockAcquire,
          [keys.writer, keys.readers, keys.intents, keys.fence, marker],
          [
            token,
            String(o.ttl),
            randomBytes(8).toString('hex'),
            mode,
            o.timeout > 0 && mode === 'write' ? String(queueLease(o, timeout)) : '0',
            wantAge ? '1' : '0',
          ],
          timeout,
        ),
      // A writer's release also leaves its intent on nodes that refused it before.
      hold: () => ({ key: held, kind, member: token, ...(mode === 'write' ? { alsoLeave: keys.intents } : { excludedBy: keys.writer }) }),
      // Undo a failed round's grant, but keep a waiting writer's intent.
      undo: (node) => node.run(scripts.leaseRelease, [held], [kind, token, keys.channel], timeout),
    }),
    ...(mode === 'write'
      ? {
          giveUp: async (token: string) => {
            await Promise.all(
              host.redlock.nodes.map((node) => releaseOn(host, node, [keys.intents], ['zset', token, keys.channel], [keys.name])),
            );
          },
        }
      : {}),
  };
}
