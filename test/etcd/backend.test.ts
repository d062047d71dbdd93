// What is particular to the etcd backend (the shared API contract is in test/contract/): options that only
// mean something for Redis, errors of an unreachable cluster, loss signalled at once, a waiter's place kept
// past its own ttl, and resource names that cannot collide in etcd's key space.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError, LockLostError, LockManager, QuorumError, type NodeErrorEvent } from '../../src/index.js';
import { startEtcdCluster, type LocalEtcdCluster } from '../../src/testing/index.js';
import { abortedWithin, eventually } from '../support/harness.js';
import { requireEtcd } from '../support/optional.js';

describe('etcd backend', { skip: requireEtcd('etcd (the etcd backend)') }, () => {
  let cluster: LocalEtcdCluster;
  const managers: LockManager[] = [];
  const manager = (ttl = 3_000): LockManager => {
    const m = new LockManager(cluster.url, { ttl, acquireTimeout: 10_000 });
    managers.push(m);
    return m;
  };
  before(async () => {
    cluster = await startEtcdCluster({ members: 3 });
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    await cluster?.stop();
  });

  test('Redis-only options and bad URLs are InvalidArgumentError at construction', () => {
    for (const option of [
      { driftFactor: 0.01 },
      { restartQuarantine: false as const },
      { nodeTimeout: 100 },
      { waitForReplicas: false as const },
    ])
      assert.throws(
        () => new LockManager(cluster.url, option),
        (e) => e instanceof InvalidArgumentError && /only applies to Redis/.test(e.message),
      );
    for (const url of ['etcd://', 'etcd://host', 'etcd://a:1,,b:2', 'etcd://a b:1'])
      assert.throws(
        () => new LockManager(url),
        (e) => e instanceof InvalidArgumentError,
        url,
      );
  });

  test('an unreachable cluster: QuorumError naming the endpoint, tryAcquire at once and acquire at its timeout; nodeError told', async () => {
    // The client library is loaded before the clock starts: its first load is part of the first call, and took
    // 1-3 s of the 5 s below on a machine at load average 20 (the once-seen failure, kept by run-tests.mjs).
    await import('etcd3');
    const down = new LockManager('etcd://127.0.0.1:1', { ttl: 3_000 });
    managers.push(down);
    const told: NodeErrorEvent[] = [];
    down.on('nodeError', (e) => told.push(e));
    const t0 = performance.now();
    const thrown = await down.tryAcquire('x').then(
      () => assert.fail('granted'),
      (e: unknown) => e,
    );
    assert.ok(thrown instanceof QuorumError && thrown.nodeErrors[0]?.node === 'etcd://127.0.0.1:1', String(thrown));
    assert.ok(performance.now() - t0 < 5_000, 'tryAcquire failed within one request deadline');
    // The failed call is told once, as the nodeError event (and so the fencelock.node.errors metric), naming the cluster.
    assert.equal(told.length, 1, JSON.stringify(told.map((e) => e.error.message)));
    assert.deepEqual(
      { ...told[0], error: undefined },
      { node: 'etcd://127.0.0.1:1', operation: 'acquire', resources: ['x'], error: undefined },
    );
    assert.equal(told[0]?.error, thrown.nodeErrors[0]?.error, 'the very error the QuorumError carries');
    const t1 = performance.now();
    await assert.rejects(down.acquire('x', { timeout: 1_500 }), (e) => e instanceof QuorumError && /127\.0\.0\.1:1/.test(e.message));
    assert.ok(performance.now() - t1 < 6_000, 'acquire gave up around its timeout');
    // Each failed try of the waiting acquire is told once.
    assert.ok(told.length >= 2, `${told.length} nodeError events`);
    assert.equal(new Set(told.map((e) => e.error)).size, told.length, 'no failure told twice');
    const info = await down.inspect('x');
    assert.ok(info.nodes[0]?.error, 'inspect reports the error instead of throwing');
  });

  test('a cluster with authentication: no credentials is a QuorumError naming the cluster; the user’s own client works', async () => {
    const secured = await startEtcdCluster({ members: 1 });
    try {
      const api = async (route: string, body: object): Promise<void> => {
        const res = await fetch(`${secured.endpoints[0]}${route}`, { method: 'POST', body: JSON.stringify(body) });
        assert.equal(res.status, 200, `${route}: ${await res.text()}`);
      };
      await api('/v3/auth/role/add', { name: 'root' });
      await api('/v3/auth/user/add', { name: 'root', password: 'secret' });
      await api('/v3/auth/user/grant', { user: 'root', role: 'root' });
      await api('/v3/auth/enable', {});
      const anonymous = new LockManager(secured.url, { ttl: 3_000 });
      managers.push(anonymous);
      await assert.rejects(
        anonymous.tryAcquire('secured'),
        (e) => e instanceof QuorumError && e.nodeErrors[0]?.node === secured.url && /user name|permission|auth/i.test(e.message),
      );
      const { Etcd3 } = await import('etcd3');
      const client = new Etcd3({ hosts: secured.endpoints, auth: { username: 'root', password: 'secret' } });
      const authed = new LockManager(client, { ttl: 3_000 });
      try {
        const lock = await authed.acquire('secured');
        assert.ok(lock.fence > 0n);
        await lock.release();
      } finally {
        await authed.close();
        client.close();
      }
    } finally {
      await secured.stop();
    }
  });

  test('forceRelease under withLock: lock.signal aborts at once, not at the next renewal', async () => {
    const [a, b] = [manager(9_000), manager()];
    const resource = 'watched';
    const result = a.withLock(resource, async (lock) => {
      const forcedAt = performance.now();
      await b.forceRelease(resource);
      const reason = await abortedWithin(lock.signal, 1_000);
      assert.ok(reason instanceof LockLostError);
      return performance.now() - forcedAt;
    });
    await assert.rejects(result, (e) => e instanceof LockLostError);
  });

  test('a waiter keeps its place past its own ttl, in arrival order', async () => {
    const [a, b, c] = [manager(10_000), manager(2_000), manager(2_000)];
    const resource = 'long-wait';
    const held = await a.acquire(resource);
    const order: string[] = [];
    const first = b.acquire(resource, { timeout: 15_000 }).then((l) => (order.push('b'), l));
    // c asks once b is in line (not after a fixed pause, which a slow start of b's client could outlast).
    await eventually(async () => (await a.inspect(resource)).nodes[0]?.waiters === 1, 10_000, 20);
    const second = c.acquire(resource, { timeout: 15_000 }).then((l) => (order.push('c'), l));
    // Longer than the waiters' 2 s ttl (and etcd's 2 s minimum lease): only their renewals keep them in line.
    await new Promise((r) => setTimeout(r, 4_500));
    assert.equal((await a.inspect(resource)).nodes[0]?.waiters, 2);
    await held.release();
    const lb = await first;
    await lb.release();
    const lc = await second;
    await lc.release();
    assert.deepEqual(order, ['b', 'c']);
  });

  test('resource names with "/", ":" and "%" do not fall into each other’s key ranges', async () => {
    const locks = manager();
    const names = ['a', 'a/b', 'a:b', 'a%2Fb', 'semaphore:a'];
    const held = await Promise.all(names.map((n) => locks.tryAcquire(n)));
    assert.ok(held.every(Boolean), 'each is free of the others');
    for (const n of names) assert.equal((await locks.inspect(n)).nodes[0]?.waiters, 0, n);
    const sem = await locks.semaphore('a', { limit: 1 }).tryAcquire();
    assert.ok(sem, 'a semaphore named like a mutex is its own');
    await Promise.all([...held, sem].map((l) => l?.release()));
  });

  test('a ttl under three Redis node timeouts (600 ms) is taken, and rounded up to a whole-second lease', async () => {
    // Found by `npm run chaos -- --backend etcd`: the Redis rule nodeTimeout < ttl / 3 refused these.
    const locks = manager(500);
    const lock = await locks.acquire('short-lease', { ttl: 450 });
    assert.ok(lock.remaining() > 0, `remaining ${lock.remaining()}`);
    await lock.extend(500);
    await lock.release();
  });

  test('an extend right after the acquire finds the lock: its check is a linearizable read', async () => {
    // The check was a transaction of compares alone, which etcd serves as a serializable read from whichever
    // member answers: one that had not applied the acquire yet said the key was gone (9 of 480 such pairs on
    // these 3 local members, and the test above failed so once in a full suite run). Without the fix this
    // fails every time here: each acquire grants a lease of its own (ttl 450: too short to lend one again), so
    // the key's put is the second of two writes and a follower is the more likely to lag behind it.
    const locks = manager(500);
    const lost: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, caller) => {
        for (let i = 0; i < 40; i++) {
          const lock = await locks.acquire(`extend-at-once-${caller}-${i}`, { ttl: 450 });
          await lock.extend(500).catch((e: unknown) => lost.push((e as Error).message));
          await lock.release();
        }
      }),
    );
    assert.deepEqual(lost, []);
  });
});
