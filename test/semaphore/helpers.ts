// Helpers shared by test/semaphore and test/rwlock (not a test file itself).
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { InvalidArgumentError, QuorumError, type Lock, type LockManagerOptions } from '../../src/index.js';
import type { LocalRedisNodes } from '../../src/testing/index.js';

/** Options for these tests: short leases so that expiry tests are quick, nodeTimeout >= 90 for a noisy machine. */
export const OPTIONS: LockManagerOptions = { ttl: 2_000, nodeTimeout: 100, acquireTimeout: 20_000 };

/** `<prefix>{<name>}:<suffix>` under the default prefix. */
export function keyOf(name: string, suffix: string): string {
  return `fencelock:{${name}}:${suffix}`;
}

/** Resolves when `lock.signal` aborts, with its reason; bounded by `ms`. */
export function abortReason(lock: Lock, ms: number): Promise<unknown> {
  const signal = lock.signal;
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal did not abort within ${ms} ms`)), ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/** Every command the servers ran except INFO, and the connections they accepted (for "no network call" checks). */
async function serverActivity(admin: readonly Redis[]): Promise<string[]> {
  return Promise.all(
    admin.map(async (a) => {
      const stats = await a.info('commandstats');
      const calls = stats
        .split(/\r?\n/)
        .filter((l) => l.startsWith('cmdstat_') && !l.startsWith('cmdstat_info:'))
        .map((l) => l.replace(/usec[^,]*,?/g, ''));
      const connections = /total_connections_received:(\d+)/.exec(await a.info('stats'))?.[1] ?? '?';
      return `${calls.join('|')} connections=${connections}`;
    }),
  );
}

/** Asserts that every case throws or rejects with InvalidArgumentError, and that no server saw a command meanwhile. */
export async function expectInvalidWithoutTraffic(admin: readonly Redis[], cases: ReadonlyArray<[string, () => unknown]>): Promise<void> {
  const before = await serverActivity(admin);
  for (const [label, call] of cases) {
    let outcome: unknown;
    try {
      outcome = await call();
    } catch (error) {
      outcome = error;
    }
    assert.ok(outcome instanceof InvalidArgumentError, `${label}: expected InvalidArgumentError, got ${String(outcome)}`);
    assert.equal(outcome.code, 'INVALID_ARGUMENT');
  }
  assert.deepEqual(await serverActivity(admin), before, 'a command or connection reached Redis');
}

/** Tracks how many callers are inside a section at once, and the most there ever were. */
export class Occupancy {
  now = 0;
  max = 0;
  enter(): void {
    this.now++;
    this.max = Math.max(this.max, this.now);
  }
  leave(): void {
    this.now--;
  }
}

/** Puts a string of user data at `key` on every node: `attempt` must fail with WRONGTYPE (a QuorumError) and leave it alone. */
export async function expectWrongType(admin: readonly Redis[], key: string, attempt: () => Promise<unknown>): Promise<void> {
  await Promise.all(admin.map((a) => a.set(key, 'user data')));
  const error = await attempt().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof QuorumError, `QuorumError, got ${String(error)}`);
  assert.match(error.nodeErrors[0]!.error.message, /WRONGTYPE/);
  assert.deepEqual(
    await Promise.all(admin.map((a) => a.get(key))),
    admin.map(() => 'user data'),
  );
}

/** Runs `fn` with the nodes at `indexes` killed; restarts every stopped node afterwards (they come back empty). */
export async function withNodesDown(nodes: LocalRedisNodes, indexes: readonly number[], fn: () => Promise<void>): Promise<void> {
  try {
    for (const i of indexes) await nodes.nodes[i]!.kill();
    await fn();
  } finally {
    for (const n of nodes.nodes) if (!n.isRunning()) await n.restart();
  }
}
