// fencelock and etcd's own lock recipe (`etcdctl lock`, i.e. Go's concurrency.Mutex) on one resource are
// one lock: with keyPrefix `P/`, mutex `R` is `etcdctl lock P/R`. Both directions, one FIFO queue across
// both, and a fencelock holder SIGKILLed whose etcdctl waiter gets the lock when the holder's lease ends.
// One member is enough: this is about the queue's wire format, not about faults (test/etcd/faults.test.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager } from '../../src/index.js';
import { startEtcdCluster, type LocalEtcdCluster } from '../../src/testing/index.js';
import { requireEtcd } from '../support/optional.js';
import { etcdctlLock, requireEtcdctl, type EtcdctlLock } from '../support/etcdctl.js';
import { eventually } from '../support/harness.js';
import { startLeaseHolder } from '../support/child.js';

const skip = requireEtcd('etcd (the etcd interop tests)') || requireEtcdctl();

describe('etcd: fencelock and etcdctl lock share one lock', { skip }, () => {
  let cluster: LocalEtcdCluster;
  let locks: LockManager;
  let others: LockManager;
  const foreign: EtcdctlLock[] = [];
  const etcdctl = (name: string, ttlSeconds?: number): EtcdctlLock => {
    const e = etcdctlLock(cluster.endpoints, name, ttlSeconds);
    foreign.push(e);
    return e;
  };
  /** waiters in R's queue behind its holder, as fencelock reads them (an etcdctl key counts as one) */
  const waiters = async (resource: string): Promise<number> => (await locks.inspect(resource)).nodes[0]?.waiters ?? -1;

  before(async () => {
    cluster = await startEtcdCluster({ members: 1 });
    locks = new LockManager(cluster.url, { keyPrefix: 'P/', ttl: 5_000, acquireTimeout: 20_000 });
    others = new LockManager(cluster.url, { keyPrefix: 'P/', ttl: 5_000, acquireTimeout: 20_000 });
  });
  after(async () => {
    for (const e of foreign) if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
    await Promise.all([locks?.close(), others?.close()]);
    await cluster?.stop();
  });

  test('a fencelock holder of R keeps `etcdctl lock P/R` waiting until it releases', async () => {
    const lock = await locks.acquire('R1');
    const e = etcdctl('P/R1');
    await eventually(async () => (await waiters('R1')) === 1, 10_000);
    assert.equal((await locks.inspect('R1')).holder, lock.value, 'fencelock still holds, etcdctl queued behind it');
    assert.equal(e.holds(), false, `etcdctl printed its key while fencelock held the lock: ${e.output()}`);
    const releasedAt = performance.now();
    await lock.release();
    const { key, at } = await e.held;
    assert.ok(at >= releasedAt, 'etcdctl held only after the release');
    assert.match(key, /^P\/R1\/[0-9a-f]+$/);
    assert.equal((await locks.inspect('R1')).holder, '', 'etcdctl is the holder now (its key has an empty value)');
    assert.equal(await e.unlock(), 0, e.output());
  });

  test('an `etcdctl lock P/R` holder keeps fencelock waiting until it unlocks', async () => {
    const e = etcdctl('P/R2');
    await e.held;
    assert.equal(await locks.tryAcquire('R2'), null, 'tryAcquire while etcdctl holds');
    let grantedAt = 0;
    const waiting = locks.acquire('R2').then((lock) => ((grantedAt = performance.now()), lock));
    await eventually(async () => (await waiters('R2')) === 1, 10_000);
    assert.equal(grantedAt, 0, 'fencelock was granted while etcdctl held the lock');
    const unlockedAt = performance.now();
    assert.equal(await e.unlock(), 0, e.output());
    const lock = await waiting;
    assert.ok(grantedAt >= unlockedAt);
    await lock.release();
  });

  test('one FIFO queue: a fencelock holder, then an etcdctl waiter, then a fencelock waiter are served in that order', async () => {
    const order: string[] = [];
    const first = await locks.acquire('R3');
    const e = etcdctl('P/R3');
    await eventually(async () => (await waiters('R3')) === 1, 10_000);
    const third = others.acquire('R3').then((lock) => (order.push('fencelock waiter'), lock));
    await eventually(async () => (await waiters('R3')) === 2, 10_000);
    void e.held.then(() => order.push('etcdctl'));
    order.push('holder releases');
    await first.release();
    await e.held;
    assert.deepEqual(order, ['holder releases', 'etcdctl'], 'etcdctl, queued second, is served before the later fencelock waiter');
    // The fencelock waiter behind etcdctl is still waiting: its turn comes only when etcdctl unlocks.
    assert.equal((await locks.inspect('R3')).nodes[0]?.waiters, 1);
    order.push('etcdctl unlocks');
    await e.unlock();
    const lock = await third;
    assert.deepEqual(order, ['holder releases', 'etcdctl', 'etcdctl unlocks', 'fencelock waiter']);
    assert.ok(lock.fence > first.fence);
    await lock.release();
  });

  test('a fencelock holder SIGKILLed: the etcdctl waiter gets the lock when its lease ends (ttl 2 s)', async (t) => {
    // The child holds with the default keyPrefix (fencelock:) and ttl 2 000 ms, kept alive until killed.
    const holder = startLeaseHolder(cluster.url, 'R4');
    try {
      await holder.fence();
      const e = etcdctl('fencelock:R4');
      const view = new LockManager(cluster.url, { ttl: 2_000 });
      try {
        await eventually(async () => (await view.inspect('R4')).nodes[0]?.waiters === 1, 10_000);
        assert.equal(e.holds(), false, 'etcdctl held while the fencelock holder was alive');
        const killedAt = performance.now();
        holder.child.kill('SIGKILL');
        const { at } = await e.held;
        const after = at - killedAt;
        // The holder renewed its 2 s lease every 667 ms: it ends at most 2 s after the kill (and etcd's lease
        // expiry runs on a 500 ms tick), plus etcdctl's own turn-taking.
        assert.ok(after < 2_000 + 1_500, `etcdctl got the lock ${Math.round(after)} ms after the holder was killed`);
        t.diagnostic(`etcdctl got the lock ${Math.round(after)} ms after the fencelock holder's SIGKILL (ttl 2000 ms)`);
        await e.unlock();
      } finally {
        await view.close();
      }
    } finally {
      if (holder.child.exitCode === null) holder.child.kill('SIGKILL');
      await holder.exited;
    }
  });
});
