import { randomBytes } from 'node:crypto';
import { nameKeys, type HoldRequest, type NameKeys, type RoundHost } from './quorum-round.js';
import { scripts } from './scripts/index.js';

/**
 * A semaphore's keys: `<prefix>{<name>}:permits`, a sorted set of permits
 * (member `<slot>:<owner token>`, score = the lease end in node ms), next to
 * the name's fence hash and release channel. semaphore-acquire.lua says why a
 * permit takes a slot.
 */
export interface SemaphoreKeys extends NameKeys {
  readonly permits: string;
}

export function semaphoreKeys(prefix: string, name: string): SemaphoreKeys {
  const keys = nameKeys(prefix, name);
  return { ...keys, permits: `${keys.base}:permits` };
}

/**
 * The rounds of one acquire call for a permit while fewer than `limit` are
 * held. On N nodes the leader chooses the slot and the others are asked for it.
 */
export function permitRequest(host: RoundHost, keys: SemaphoreKeys, limit: number): HoldRequest {
  const timeout = host.redlock.options.nodeTimeout;
  return {
    keys,
    round: (token, { ttl }) => ({
      keys,
      token,
      ttl,
      leaderFirst: true,
      ask: (node, marker, slot, wantAge) =>
        node.run(
          scripts.semaphoreAcquire,
          [keys.permits, keys.fence, marker],
          [token, String(ttl), String(limit), randomBytes(8).toString('hex'), slot, wantAge ? '1' : '0'],
          timeout,
        ),
      // Released by token, whichever slot: a node that chose another slot in a split round holds that one.
      hold: (slot) => ({ key: keys.permits, kind: 'zset', member: `${slot}:${token}`, releaseAs: ['permit', token] }),
      undo: (node) => node.run(scripts.leaseRelease, [keys.permits], ['permit', token, keys.channel], timeout),
    }),
  };
}
