// What is particular to the ZooKeeper backend (the shared API contract is in test/contract/): options that
// only mean something for Redis, errors of an unreachable ensemble, loss signalled at once, FIFO waiting,
// names that cannot collide, the fence as a zxid of the ensemble's log, and nothing left behind (also by
// a holder that crashed).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import { InvalidArgumentError, LockLostError, LockManager, QuorumError, type NodeErrorEvent } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { abortedWithin, eventually } from '../support/harness.js';
import { startLeaseHolder } from '../support/child.js';
import { requireZooKeeper } from '../support/optional.js';

describe('zookeeper backend', { skip: requireZooKeeper('ZooKeeper (the ZooKeeper backend)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  const managers: LockManager[] = [];
  const manager = (ttl = 4_000): LockManager => {
    const m = new LockManager(ensemble.url, { ttl, acquireTimeout: 10_000 });
    managers.push(m);
    return m;
  };
  /** The children of a znode, through a client of our own (null when it does not exist). */
  async function childrenOf(path: string): Promise<string[] | null> {
    const client = zookeeper.createClient(ensemble.connectionString);
    client.connect();
    try {
      return await new Promise((resolve, reject) =>
        client.getChildren(path, (error, children) => {
          if (error && (error as { getCode?: () => number }).getCode?.() === zookeeper.Exception.NO_NODE) resolve(null);
          else if (error) reject(error);
          else resolve(children);
        }),
      );
    } finally {
      client.close();
    }
  }
  before(async () => {
    ensemble = await startZooKeeperEnsemble({ servers: 3 });
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    await ensemble?.stop();
  });

  test('Redis-only options and bad URLs are InvalidArgumentError at construction', () => {
    for (const option of [
      { driftFactor: 0.01 },
      { restartQuarantine: false as const },
      { nodeTimeout: 100 },
      { waitForReplicas: false as const },
    ])
      assert.throws(
        () => new LockManager(ensemble.url, option),
        (e) => e instanceof InvalidArgumentError && /only applies to Redis/.test(e.message),
      );
    for (const url of ['zk://', 'zk://host', 'zk://a:1,,b:2', 'zk://a b:1'])
      assert.throws(
        () => new LockManager(url),
        (e) => e instanceof InvalidArgumentError,
        url,
      );
  });

  test('an unreachable ensemble: QuorumError naming it, tryAcquire within one deadline and acquire at its timeout; nodeError told', async () => {
    const down = new LockManager('zk://127.0.0.1:1', { ttl: 3_000 });
    managers.push(down);
    const told: NodeErrorEvent[] = [];
    down.on('nodeError', (e) => told.push(e));
    const t0 = performance.now();
    const thrown = await down.tryAcquire('x').then(
      () => assert.fail('granted'),
      (e: unknown) => e,
    );
    assert.ok(thrown instanceof QuorumError && thrown.nodeErrors[0]?.node === 'zk://127.0.0.1:1', String(thrown));
    assert.ok(performance.now() - t0 < 5_000, 'tryAcquire failed within one request deadline');
    // The failed call is told once, as the nodeError event (and so the fencelock.node.errors metric), naming the ensemble.
    assert.equal(told.length, 1, JSON.stringify(told.map((e) => e.error.message)));
    assert.deepEqual(
      { ...told[0], error: undefined },
      { node: 'zk://127.0.0.1:1', operation: 'acquire', resources: ['x'], error: undefined },
    );
    assert.equal(told[0]?.error, thrown.nodeErrors[0]?.error, 'the very error the QuorumError carries');
    const t1 = performance.now();
    await assert.rejects(down.acquire('x', { timeout: 3_000 }), (e) => e instanceof QuorumError && /127\.0\.0\.1:1/.test(e.message));
    assert.ok(performance.now() - t1 < 7_000, 'acquire gave up around its timeout');
    // Each failed try of the waiting acquire is told once.
    assert.ok(told.length >= 2, `${told.length} nodeError events`);
    assert.equal(new Set(told.map((e) => e.error)).size, told.length, 'no failure told twice');
    const info = await down.inspect('x');
    assert.ok(info.nodes[0]?.error, 'inspect reports the error instead of throwing');
  });

  test('the user’s own client: used as given (connected later is fine), never closed by the manager, left without our listeners', async () => {
    const client = zookeeper.createClient(ensemble.connectionString, { sessionTimeout: 4_000 });
    try {
      const listeners = client.listenerCount('state');
      const locks = new LockManager(client, { ttl: 4_000 });
      managers.push(locks); // closed by the suite too, should an assertion fail first
      client.connect();
      const lock = await locks.acquire('own-client');
      assert.ok(lock.fence > 0n);
      assert.equal(client.listenerCount('state'), listeners + 1, "the manager follows the session's expiry");
      await lock.release();
      await locks.close();
      assert.equal(client.getState().name, 'SYNC_CONNECTED', 'still open after the manager closed');
      assert.equal(client.listenerCount('state'), listeners, 'a closed manager leaves no listener on the client (nor itself, through one)');
    } finally {
      client.close(); // also when an assertion failed: an open client would keep the test process alive
    }
  });

  test('forceRelease under withLock: lock.signal aborts at once, not at the next extension', async () => {
    const [a, b] = [manager(9_000), manager()];
    const resource = 'watched';
    const result = a.withLock(resource, async (lock) => {
      await b.forceRelease(resource);
      const reason = await abortedWithin(lock.signal, 1_000);
      assert.ok(reason instanceof LockLostError);
    });
    await assert.rejects(result, (e) => e instanceof LockLostError);
  });

  test('waiters are served in arrival order, each woken by the release of the one before', async () => {
    const [a, b, c] = [manager(), manager(), manager()];
    const resource = 'fifo';
    const held = await a.acquire(resource);
    const order: string[] = [];
    const first = b.acquire(resource, { timeout: 15_000 }).then((l) => (order.push('b'), l));
    await (async () => {
      for (let i = 0; i < 100 && (await a.inspect(resource)).nodes[0]?.waiters !== 1; i++) await new Promise((r) => setTimeout(r, 20));
    })();
    const second = c.acquire(resource, { timeout: 15_000 }).then((l) => (order.push('c'), l));
    for (let i = 0; i < 100 && (await a.inspect(resource)).nodes[0]?.waiters !== 2; i++) await new Promise((r) => setTimeout(r, 20));
    const info = await a.inspect(resource);
    assert.equal(info.nodes[0]?.waiters, 2);
    assert.equal(info.holder, held.value);
    assert.ok(info.fence >= held.fence, 'inspect’s fence: the queue’s last change, at least the holder’s');
    assert.equal(info.nodes[0]?.remaining, -1, 'held until released or its session ends');
    await held.release();
    const lb = await first;
    assert.ok(lb.fence > held.fence);
    assert.ok(lb.fence > info.fence, 'every later holder’s fence exceeds what inspect reported');
    await lb.release();
    const lc = await second;
    assert.ok(lc.fence > lb.fence);
    await lc.release();
    assert.deepEqual(order, ['b', 'c']);
  });

  test('resource names with "/", ":", "%", "." and ".." are znodes of their own', async () => {
    const locks = manager();
    const names = ['a', 'a/b', 'a:b', 'a%2Fb', 'semaphore:a', '.', '..', 'tab\there'];
    const held = await Promise.all(names.map((n) => locks.tryAcquire(n)));
    assert.ok(held.every(Boolean), 'each is free of the others');
    for (const n of names) assert.equal((await locks.inspect(n)).nodes[0]?.waiters, 0, n);
    const sem = await locks.semaphore('a', { limit: 1 }).tryAcquire();
    assert.ok(sem, 'a semaphore named like a mutex is its own');
    await Promise.all([...held, sem].map((l) => l?.release()));
  });

  test('nothing is left behind: a released resource’s queue znode is swept within one sweep period, so what is kept stays bounded', async (t) => {
    // ttl 2 s: this manager sweeps its root every 2 s (sweep.ts)
    const locks = new LockManager(ensemble.url, { ttl: 2_000, keyPrefix: 'bounded:' });
    managers.push(locks);
    for (let i = 0; i < 40; i++) await (await locks.acquire(`r-${i}`)).release();
    const sem = await locks.semaphore('s', { limit: 2 }).acquire();
    await sem.release();
    const releasedAt = performance.now();
    // A release leaves its queue for the sweep: the next acquire of a busy resource finds it there.
    assert.ok(((await childrenOf('/bounded')) ?? []).length > 0, 'the queues are still there right after the releases');
    // Bounded: one sweep period (2 s) and the sweep itself, looked at every 100 ms.
    await eventually(async () => (await childrenOf('/bounded'))?.length === 0, 6_000, 100);
    t.diagnostic(`every queue swept ${Math.round(performance.now() - releasedAt)} ms after the last release`);
  });

  test('a holder that crashed: its session expires, a sweep deletes the queue it left empty, acquires go on meanwhile', async (t) => {
    const sweeper = manager(); // ttl 4 s: sweeps every 4 s once it has a session
    await (await sweeper.acquire('sweeper-warm-up')).release();
    const resource = 'crashed-holder';
    const queue = `/fencelock/${resource}`;
    const holder = startLeaseHolder(ensemble.url, resource);
    const { child, exited } = holder;
    try {
      const crashedFence = await holder.fence();
      assert.equal((await childrenOf(queue))?.length, 1);
      child.kill('SIGKILL'); // no release, no session close: the ensemble ends the session at its timeout (2 s)
      await exited;
      const killedAt = performance.now();
      // Meanwhile another manager makes and deletes queues under the sweeps: every tryAcquire is granted.
      const other = manager();
      let swept = false;
      let churned = 0;
      const churn = (async () => {
        for (; !swept; churned++) {
          const lock = await other.tryAcquire(`churn-${churned % 3}`);
          assert.ok(lock, `tryAcquire ${churned} was granted`);
          await lock.release();
        }
      })();
      try {
        // Bounded: the session's timeout (2 s), then at most one sweep period (4 s), well within 100 looks.
        for (let i = 0; i < 100 && !swept; i++) {
          swept = (await childrenOf(queue)) === null;
          if (!swept) await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        swept = true;
        await churn;
      }
      assert.equal(await childrenOf(queue), null, 'the empty queue was swept');
      t.diagnostic(`queue swept ${Math.round(performance.now() - killedAt)} ms after the holder's SIGKILL; ${churned} acquires meanwhile`);
      assert.ok(churned > 0);
      const next = await other.tryAcquire(resource);
      assert.ok(next && next.fence > crashedFence, 'the resource is free, with a greater fence');
      await next.release();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('the fence is a zxid of the queue’s changes: it keeps rising when a queue is deleted and created again', async () => {
    const locks = manager();
    const fences: bigint[] = [];
    const sequences: string[] = [];
    const client = zookeeper.createClient(ensemble.connectionString);
    client.connect();
    try {
      for (let i = 0; i < 4; i++) {
        const lock = await locks.acquire('recreated');
        fences.push(lock.fence);
        sequences.push(...((await childrenOf('/fencelock/recreated')) ?? []).map((n) => n.slice(-10)));
        await lock.release();
        // As a sweep would: the empty queue is deleted, so its sequence numbers start over next time. A real
        // sweep (of this manager, after the release) may have deleted it first: NO_NODE is the same outcome.
        await new Promise<void>((resolve, reject) =>
          client.remove('/fencelock/recreated', -1, (e) =>
            e && (e as { code?: number }).code !== zookeeper.Exception.NO_NODE ? reject(e) : resolve(),
          ),
        );
      }
    } finally {
      client.close();
    }
    assert.deepEqual(sequences, Array(4).fill('0000000000'), 'every holder had sequence number 0');
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(', ')}`);
  });

  test('the lease is the session: a ttl beyond the session timeout is capped to it; a shorter ttl is the lock’s own', async () => {
    const locks = manager(4_000);
    const long = await locks.acquire('long', { ttl: 60_000 });
    assert.ok(long.remaining() <= 4_000, `remaining ${long.remaining()}`);
    const short = await locks.acquire('short', { ttl: 1_000 });
    assert.ok(short.remaining() <= 1_000 && short.remaining() > 0, `remaining ${short.remaining()}`);
    await Promise.all([long.release(), short.release()]);
  });

  test('a ttl under three Redis node timeouts (600 ms) is taken: nodeTimeout is a Redis setting, not a limit here', async () => {
    // Found by `npm run chaos -- --backend zookeeper` (a draft run, seed 2, a 521 ms ttl): the Redis rule
    // nodeTimeout < ttl / 3 refused these.
    const locks = manager(500);
    const lock = await locks.acquire('short-lease', { ttl: 450 });
    assert.ok(lock.remaining() <= 450 && lock.remaining() > 0, `remaining ${lock.remaining()}`);
    await lock.extend(500);
    await lock.release();
  });
});
