// The leases of released locks, lent to the next ones (src/etcd/leases.ts): sequential locks of one manager
// use one lease, with no grant or revoke between them; and a lease lent again still gives each hold its own
// ttl on the server, whatever the manager does with its other locks meanwhile.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager } from '../../src/index.js';
import { oneMemberEtcd } from '../support/etcd.js';
import { requireEtcd } from '../support/optional.js';

describe('etcd: leases lent again', { skip: requireEtcd('etcd (the etcd backend)') }, () => {
  const etcd = oneMemberEtcd(3_000);
  const manager = (ttl?: number): LockManager => etcd.manager(ttl);
  const leases = async (): Promise<string[]> => (await etcd.client.leaseClient.leaseLeases()).leases.map((l) => String(l.ID)).sort();

  test('sequential locks of one manager hang on one lease: no grant or revoke between them, 2 writes a lock', async () => {
    // An idle lease is lent while half its ttl is left: 10 s leaves this loop 5 s, also on a loaded machine.
    const locks = manager(10_000);
    const before = await leases();
    const seen = new Set<string>();
    let lastFence = 0n;
    for (let i = 0; i < 5; i++) {
      const lock = await locks.acquire(`seq-${i}`);
      assert.ok(lock.fence > lastFence);
      // A lock at once holds from its create revision: 2 revisions a lock (put, then delete), nothing else.
      if (i > 0) assert.equal(lock.fence, lastFence + 2n, 'nothing written to the keys between two locks but theirs');
      lastFence = lock.fence;
      const now = (await leases()).filter((id) => !before.includes(id));
      assert.equal(now.length, 1, `one lease of this manager's while it holds lock ${i}: ${now.join(', ')}`);
      seen.add(now[0]!);
      assert.equal((await lock.release()).released, 1);
    }
    assert.equal(seen.size, 1, 'the same lease each time');
    // Idle, nothing hangs on it: the key of the last lock is gone.
    assert.equal((await etcd.client.getAll().prefix('fencelock:seq-').keys()).length, 0);
  });

  test('a hold on a lent lease, not extended, ends on the server at its own ttl while the manager goes on locking', async () => {
    const locks = manager(2_000);
    const other = manager(2_000);
    await (await locks.acquire('warm-lease')).release(); // now an idle lease, lent to the next lock
    const held = await locks.acquire('own-ttl', { autoExtend: false });
    const heldAt = performance.now();
    // The manager keeps locking meanwhile (its other holds are renewed, the idle leases lent and given back).
    let busy = true;
    const churn = (async () => {
      for (let i = 0; busy && i < 200; i++) await locks.withLock(`churn-${i % 3}`, () => new Promise((r) => setTimeout(r, 20)));
    })();
    try {
      const next = await other.acquire('own-ttl', { timeout: 10_000 });
      const after = performance.now() - heldAt;
      assert.ok(Date.now() >= held.validUntil, 'the next holder got the lock before the first one’s validity ended');
      assert.ok(after < 2_000 + 1_500, `the next holder got it ${Math.round(after)} ms after the grant (ttl 2 s)`);
      assert.ok(next.fence > held.fence);
      assert.equal(held.isValid(), false);
      await next.release();
    } finally {
      busy = false;
      await churn;
    }
  });
});
