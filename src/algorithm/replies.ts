// The nodes' replies to the Redis scripts, parsed: anything unexpected becomes that node's error (naming
// it), never a crash. Fences travel as decimal strings (Lua numbers are doubles and would round counters
// past 2^53) and become bigints here.
import type { RedisNode } from '../adapters/index.js';
import { NodeError } from '../errors.js';
import type { ResourceKeys } from '../keys.js';
import type { NodeReport } from './node-health.js';

export type NodeState = NodeReport & { readonly epoch: string };

/** One node's reply to the mutex's acquire script. */
export type AcquireReply =
  | ({ kind: 'granted'; fence: bigint; counter: bigint } & NodeState)
  /** held by another owner (pttl > 0 or -1), or free but another waiter is ahead of us (`ahead`); `counter`: the node's fence counter (0n: not asked) */
  | ({ kind: 'held'; pttl: number; ahead: boolean; counter: bigint } & NodeState)
  | { kind: 'error'; error: Error };

/**
 * What a node's marker says of its data (see _node-state.lua):
 * - 'trusted': it kept its data since the deployment began (or was repaired since): its grants count;
 * - 'quarantined': it lost its data and counts toward no acquire for `quarantinedFor` ms more;
 * - 'repairing': quarantine over, this manager is about to raise its counter and mark it trusted;
 * - 'untrusted': it lost its data and is not repaired (fewer than a majority of trusted nodes answer);
 * - 'new': no node is trusted yet (a new deployment): the first acquire marks them all trusted;
 * - 'empty': no marker at all (nothing has run on it since it came back empty).
 */
export type NodeDataState = 'trusted' | 'quarantined' | 'repairing' | 'untrusted' | 'new' | 'empty';

/** One node's view of a resource, as `LockManager.inspect` reports it. */
export interface NodeView {
  /** the node's address, e.g. `127.0.0.1:7001` */
  readonly node: string;
  /** the holder's owner token, or null when free (or on error) */
  readonly owner: string | null;
  /** ms left on the lease (-1: no expiry); 0 when free */
  readonly remaining: number;
  /** waiters in the resource's queue on this node */
  readonly waiters: number;
  /** the node's fence counter (the next fence there exceeds it); null on error */
  readonly fence: bigint | null;
  /** the node's data state; null on error */
  readonly state: NodeDataState | null;
  /** ms left of the node's restart quarantine (0: none) */
  readonly quarantinedFor: number;
  /** the node's error (unreachable, timed out, an error reply), or null when it answered */
  readonly error: Error | null;
}

export interface InspectReply {
  readonly view: Pick<NodeView, 'owner' | 'remaining' | 'waiters' | 'fence'>;
  readonly report: NodeReport;
}

export function parseInspectReply([owner, pttl, waiters, epoch, trusted, fence, longest, age]: unknown[], node: RedisNode): InspectReply {
  const held = typeof owner === 'string';
  return {
    view: {
      owner: held ? owner : null,
      remaining: held ? Math.max(-1, Number(pttl)) : 0,
      waiters: Number(waiters),
      fence: parseFence(fence, node),
    },
    report: { epoch: typeof epoch === 'string' ? epoch : null, trusted: Number(trusted) === 1, longest: Number(longest), age: Number(age) },
  };
}

/** Fences travel as decimal strings: Lua numbers are doubles and would round counters past 2^53. */
export function parseFence(value: unknown, node: RedisNode): bigint {
  const text = String(value);
  if (!/^\d+$/.test(text))
    throw new NodeError(node.name, `fence counter is not a non-negative integer: ${JSON.stringify(text.slice(0, 40))}`);
  return BigInt(text);
}

/** The acquire script's reply (one string of fields, see acquire.lua); anything else is that node's error (kind 'error'). */
export function parseAcquireReply(reply: unknown, node: RedisNode, epochOf: (epoch: string) => string): AcquireReply {
  const fields = typeof reply === 'string' ? reply.split(' ') : [];
  const [ok, value, epoch, age, trusted, longest, ahead, counter] = fields;
  try {
    if (fields.length < 6) throw new NodeError(node.name, `unexpected acquire script reply: ${JSON.stringify(reply)}`);
    const isTrusted = trusted === '1';
    if (ok === '1') {
      const fence = parseFence(value, node);
      return {
        kind: 'granted',
        fence,
        counter: fence,
        epoch: epochOf(String(epoch)),
        age: Number(age),
        trusted: isTrusted,
        longest: Number(longest),
      };
    }
    return {
      kind: 'held',
      pttl: Number(value),
      ahead: ahead === '1',
      counter: counter === undefined ? 0n : parseFence(counter, node),
      epoch: epochOf(String(epoch)),
      age: Number(age),
      trusted: isTrusted,
      longest: Number(longest),
    };
  } catch (error) {
    return { kind: 'error', error: error as Error };
  }
}

/** acquire.lua's KEYS: the lock keys, then the marker (the rest is named after the lock keys). */
export function acquireKeys(keys: readonly ResourceKeys[], marker: string): string[] {
  const out: string[] = [];
  for (const k of keys) out.push(k.lock);
  out.push(marker);
  return out;
}

/** Script replies are arrays of a known length; anything else is the node's fault, reported as its error. */
export function arrayReply(reply: unknown, length: number, node: RedisNode, script: string): unknown[] {
  if (Array.isArray(reply) && reply.length >= length) return reply as unknown[];
  throw new NodeError(node.name, `unexpected ${script} script reply: ${JSON.stringify(reply)}`);
}
