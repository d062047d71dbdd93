// The nodes' replies to the Redis scripts, parsed: anything unexpected becomes that node's error (naming
// it), never a crash. Fences travel as decimal strings (Lua numbers are doubles and would round counters
// past 2^53) and become bigints here.
import type { RedisNode } from './adapters/index.js';
import { NodeError } from '../errors.js';
import type { ResourceKeys } from './keys.js';
import type { NodeView } from '../backend.js';
import type { NodeReport } from './node-health.js';

export type NodeState = NodeReport & { readonly epoch: string };

/** One node's reply to the mutex's acquire script. */
export type AcquireReply =
  | ({ kind: 'granted'; fence: bigint; counter: bigint } & NodeState)
  /** held by another owner (pttl > 0 or -1), or free but another waiter is ahead of us (`ahead`); `counter`: the node's fence counter (0n: not asked) */
  | ({ kind: 'held'; pttl: number; ahead: boolean; counter: bigint } & NodeState)
  | { kind: 'error'; error: Error };

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
