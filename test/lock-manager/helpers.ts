// Helpers shared by the test/lock-manager/*.test.ts files (not a test file itself).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { LockManager, LockManagerOptions } from '../../src/index.js';
import { eventually, setup, type ClientKind, type Setup } from '../support/harness.js';

export const NODE_COUNTS = [1, 5] as const;

/** Key layout of one resource under the default prefix. */
export function keysOf(resource: string): { lock: string; fence: string; channel: string; queue: string; leases: string } {
  const base = `fencelock:{${resource}}`;
  return { lock: `${base}:lock`, fence: `${base}:fence`, channel: `${base}:released`, queue: `${base}:queue`, leases: `${base}:leases` };
}

/** The waiters queued for `resource` on every node, in queue order. */
export function queued(admin: readonly Redis[], resource: string): Promise<string[][]> {
  return Promise.all(admin.map((a) => a.call('ZRANGE', keysOf(resource).queue, '0', '-1') as Promise<string[]>));
}

/** How many times each node has run the commands `names` (lower case, from INFO commandstats), together. */
export async function commandCalls(admin: readonly Redis[], names: readonly string[]): Promise<number[]> {
  return Promise.all(
    admin.map(async (x) => {
      const stats = (await x.info('commandstats')) as string;
      let calls = 0;
      for (const m of stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (names.includes(m[1] as string)) calls += Number(m[2]);
      return calls;
    }),
  );
}

/** Script calls (EVAL and EVALSHA) each node has run so far. */
export function scriptCalls(admin: readonly Redis[]): Promise<number[]> {
  return commandCalls(admin, ['eval', 'evalsha']);
}

let counter = 0;
/** A resource name no other test uses (node sets are shared within a file). */
export function uniqueResource(label: string): string {
  counter++;
  return `${label}-${counter}-${randomBytes(3).toString('hex')}`;
}

/**
 * One describe block per node count, with the node set started once in
 * `before` and stopped in `after`. `body` gets a getter for the running set.
 * With `concurrency`, the block's tests run side by side (for tests that mostly
 * wait on leases; each must then use its own managers and resources).
 */
export function withNodeSets(
  title: string,
  counts: readonly number[],
  body: (env: () => Setup, nodeCount: number) => void,
  opts: { concurrency?: boolean } = {},
): void {
  for (const n of counts) {
    describe(`${title} (${n} node${n === 1 ? '' : 's'})`, { concurrency: opts.concurrency ?? false }, () => {
      let env: Setup | undefined;
      before(async () => {
        env = await setup(n);
      });
      after(async () => {
        await env?.close();
      });
      body(() => {
        assert.ok(env, 'node set not started');
        return env;
      }, n);
    });
  }
}

/**
 * A manager over fresh clients of `kind`, returned once every node answers:
 * with a small nodeTimeout a first request on a still-connecting client would
 * fail, and that is not what these tests are about. Closed by the set's close().
 */
export async function readyManager(env: Setup, kind: ClientKind, options: LockManagerOptions): Promise<LockManager> {
  const locks = await env.manager(kind, options);
  await eventually(async () => (await locks.inspect('warm-up')).nodes.every((n) => n.error === null), 5000);
  return locks;
}

/** The lock key's value on every node (null where absent). */
export function lockValues(admin: readonly Redis[], resource: string): Promise<Array<string | null>> {
  return Promise.all(admin.map((a) => a.get(keysOf(resource).lock)));
}

/** The lock key's PTTL on every node (-2 where absent). */
export function lockPttls(admin: readonly Redis[], resource: string): Promise<number[]> {
  return Promise.all(admin.map((a) => a.pttl(keysOf(resource).lock)));
}

/** Subscribers on the resource's release channel, per node. */
export function subscribers(admin: readonly Redis[], resource: string): Promise<number[]> {
  return channelSubscribers(admin, keysOf(resource).channel);
}

/** Subscribers on `channel`, per node. */
export function channelSubscribers(admin: readonly Redis[], channel: string): Promise<number[]> {
  return Promise.all(
    admin.map(async (a) => {
      const reply = (await a.call('PUBSUB', 'NUMSUB', channel)) as [string, number | string];
      return Number(reply[1]);
    }),
  );
}

/** Settles with the outcome of `p`, or throws if it does not settle within `ms` (a bound on a promise that must not hang). */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the settled outcome of `p`, never rejects: lets a test time a rejection precisely. */
export function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T; at: number } | { ok: false; error: unknown; at: number }> {
  return p.then(
    (value) => ({ ok: true as const, value, at: performance.now() }),
    (error: unknown) => ({ ok: false as const, error, at: performance.now() }),
  );
}

/** Resolves when `signal` aborts (at once when it already has), with its reason; bounded by `ms`. */
export function aborted(signal: AbortSignal, ms: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return within(
    new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
    ms,
    'signal abort',
  );
}

export type { ClientKind };
