// A node that restarts without persistence loses the lock keys on it. In plain
// Redlock (SET NX PX on a majority, no restart handling) an immediate restart
// can hand the lock to a second client while the first still holds it; a
// restart delayed past the TTL cannot. fencelock must not break in either case.
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { LockManager, type LockManagerOptions, type RestartQuarantine } from '../../src/index.js';
import { keysFor } from '../../src/redis/keys.js';
import { delay, eventually, setup, type Setup } from '../support/harness.js';

const TTL = 1_500;

/** The textbook Redlock acquire, as a baseline: SET NX PX on every node, a majority wins. */
async function plainRedlock(admin: readonly Redis[], key: string, token: string): Promise<boolean> {
  // Bounded, as a Redlock client bounds each node; generous, so that a loaded machine does not make a live node look down.
  const bounded = (a: Redis): Promise<string | null> =>
    Promise.race([a.set(key, token, 'PX', TTL, 'NX').catch(() => null), delay(700).then(() => null)]);
  const ok = await Promise.all(admin.map(bounded));
  return ok.filter((r) => r === 'OK').length >= Math.floor(admin.length / 2) + 1;
}

describe('restart without persistence while a lock is held (3 nodes)', () => {
  let s: Setup;
  const managers: LockManager[] = [];
  // Fresh nodes for every test: a test that restarts nodes leaves them untrusted, and two of three
  // untrusted (a majority lost its data) cannot be repaired (see docs/how-it-works.md).
  beforeEach(async () => {
    s = await setup(3);
  });
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.close()));
    await s?.close();
  });
  const manager = (options: LockManagerOptions): LockManager => {
    const m = new LockManager(s.nodes.urls, { ttl: TTL, nodeTimeout: 100, ...options });
    managers.push(m);
    return m;
  };
  /** Node 2 is down during A's acquire, so A holds exactly nodes 0 and 1; node 2 comes back (empty) afterwards. */
  const holdOnNodes01 = async <T>(take: () => Promise<T>): Promise<T> => {
    await s.nodes.nodes[2]!.kill();
    try {
      return await take();
    } finally {
      await s.nodes.nodes[2]!.restart();
    }
  };
  const readyAgain = async (): Promise<void> =>
    eventually(async () => (await Promise.all(s.admin.map((a) => a.ping().catch(() => 'down')))).every((p) => p === 'PONG'), 5_000, 20);

  test('plain Redlock: an immediate restart of one node gives a second client the lock while the first holds it', async () => {
    const key = 'plain:immediate';
    assert.ok(await holdOnNodes01(() => plainRedlock(s.admin, key, 'A')), 'A acquired on nodes 0 and 1');
    await s.nodes.nodes[0]!.restart();
    await readyAgain();
    const bGot = await plainRedlock(s.admin, key, 'B');
    assert.equal(bGot, true, 'B acquired too: mutual exclusion is broken (the hazard restart quarantine exists for)');
    assert.equal(await s.admin[1]!.get(key), 'A', 'A still holds node 1 and believes it holds the lock');
    await Promise.all(s.admin.map((a) => a.del(key)));
  });

  test('plain Redlock: a restart delayed past the TTL does not: A’s lease has ended before B can get in', async () => {
    const key = 'plain:delayed';
    const aStart = performance.now();
    assert.ok(await holdOnNodes01(() => plainRedlock(s.admin, key, 'A')), 'A acquired');
    await s.nodes.nodes[0]!.kill();
    await delay(TTL + 100); // the delayed restart: the node stays down for longer than any lease
    await s.nodes.nodes[0]!.restart();
    await readyAgain();
    const bGot = await plainRedlock(s.admin, key, 'B');
    assert.ok(bGot, 'B acquired');
    assert.ok(performance.now() - aStart > TTL, 'B got in only after A’s whole lease');
    await Promise.all(s.admin.map((a) => a.del(key)));
  });

  for (const mode of ['auto', false, 3_000] as RestartQuarantine[]) {
    test(`fencelock (restartQuarantine ${String(mode)}): an immediate restart gives nobody else the lock`, async () => {
      const resource = `fl:immediate:${String(mode)}`;
      const a = manager({ restartQuarantine: mode === 3_000 ? false : mode });
      await (await a.acquire(resource)).release(); // the resource is in use already, on all three nodes
      const lock = await holdOnNodes01(() => a.acquire(resource, { timeout: 3_000 }));
      const owners = await Promise.all(s.admin.map((x) => x.get(keysFor('fencelock:', resource).lock)));
      assert.deepEqual(owners.slice(0, 2), [lock.value, lock.value], 'A holds nodes 0 and 1');
      await s.nodes.nodes[0]!.restart();
      await readyAgain();
      // A client that ran through the restart, and one started after it.
      for (const b of [manager({ restartQuarantine: mode }), manager({ restartQuarantine: mode })]) {
        const got = await b.tryAcquire(resource).catch((e: unknown) => e);
        assert.ok(got === null || (got instanceof Error && (got as { code?: string }).code === 'NO_QUORUM'), `B got ${String(got)}`);
      }
      assert.equal(lock.isValid(), true, 'A still holds its lock');
      await lock.release();
    });
  }

  test('fencelock: brand-new nodes are usable at once under the default', async () => {
    const fresh = await setup(3);
    try {
      const m = new LockManager(fresh.nodes.urls, { ttl: TTL, nodeTimeout: 100 });
      try {
        const lock = await m.tryAcquire('new-deployment');
        assert.ok(lock, 'acquired on brand-new nodes at once');
        await lock.release();
      } finally {
        await m.close();
      }
    } finally {
      await fresh.close();
    }
  });
});
