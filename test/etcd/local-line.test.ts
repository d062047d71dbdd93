// A manager's callers of one mutex wait in a line in the process (src/etcd/local-line.ts): only one of them is
// in etcd's queue, and a release hands the lock to the next one with one write. What must stay true around it:
// fences from the log, strictly increasing; FIFO with other processes' waiters and etcdctl's; a caller that
// gives up leaves the line; a holder that never releases does not block it; per-lock ttl.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager, LockTimeoutError, type Lock } from '../../src/index.js';
import { oneMemberEtcd } from '../support/etcd.js';
import { requireEtcd } from '../support/optional.js';
import { etcdctlLock, requireEtcdctl } from '../support/etcdctl.js';
import { eventually } from '../support/harness.js';

describe('etcd: the line of a process’s callers of one mutex', { skip: requireEtcd('etcd (the etcd backend)') }, () => {
  const etcd = oneMemberEtcd(5_000);
  const manager = (ttl?: number): LockManager => etcd.manager(ttl);
  /** the cluster's revision: it moves with every write */
  const revision = async (): Promise<bigint> => BigInt((await etcd.client.kv.range({ key: Buffer.from('none') })).header.revision);
  const waiters = async (locks: LockManager, resource: string): Promise<number> => (await locks.inspect(resource)).nodes[0]?.waiters ?? -1;

  test('callers waiting in the process cost etcd nothing; each hand-over is one write, in arrival order, fences rising', async () => {
    const locks = manager();
    const first = await locks.acquire('line');
    const order: string[] = [];
    const callers = ['b', 'c', 'd'].map((name) =>
      locks.acquire('line').then(async (lock) => {
        order.push(name);
        return lock;
      }),
    );
    const waitingSince = await revision();
    // Give the callers time to reach etcd if they would (they must not): nothing written, nobody queued there.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await revision(), waitingSince, 'no write while the callers wait in the process');
    assert.equal(await waiters(locks, 'line'), 0, 'none of them is in etcd’s queue');
    let held: Lock = first;
    for (const [i, caller] of callers.entries()) {
      const before = await revision();
      await held.release();
      const next = await caller;
      assert.equal(order[i], ['b', 'c', 'd'][i], `served in arrival order: ${order.join(', ')}`);
      // The release was the hand-over: one write, and its revision is the next holder's fence.
      assert.equal(next.fence, before + 1n, 'the next holder’s fence is the hand-over’s revision');
      assert.ok(next.fence > held.fence);
      assert.equal(await revision(), before + 1n, 'one write a hand-over');
      assert.equal((await locks.inspect('line')).holder, next.value);
      assert.ok(next.remaining() > 4_000, `the next holder starts with its ttl (${next.remaining()} ms left)`);
      held = next;
    }
    await held.release();
    assert.equal((await etcd.client.getAll().prefix('fencelock:line/').keys()).length, 0, 'nothing left in etcd');
  });

  test('a waiter of another process queued meanwhile is served before the line’s next caller (its place in etcd’s queue)', async () => {
    const locks = manager();
    const other = manager();
    const holder = await locks.acquire('cross');
    const order: string[] = [];
    const local = locks.acquire('cross').then((lock) => (order.push('local'), lock));
    const foreign = other.acquire('cross').then((lock) => (order.push('foreign'), lock));
    await eventually(async () => (await waiters(locks, 'cross')) === 1, 5_000);
    await holder.release();
    const f = await foreign;
    assert.deepEqual(order, ['foreign'], 'the foreign waiter, queued in etcd, goes first');
    await f.release();
    const l = await local;
    assert.deepEqual(order, ['foreign', 'local']);
    assert.ok(holder.fence < f.fence && f.fence < l.fence, `${holder.fence} < ${f.fence} < ${l.fence}`);
    await l.release();
  });

  test(
    'etcdctl lock queued behind a holder is served before a caller of the holder’s own process',
    { skip: requireEtcdctl() },
    async () => {
      const locks = etcd.manager(5_000, { keyPrefix: 'P/', acquireTimeout: 20_000 });
      const holder = await locks.acquire('R');
      const e = etcdctlLock(etcd.cluster.endpoints, 'P/R');
      try {
        await eventually(async () => (await waiters(locks, 'R')) === 1, 10_000);
        let grantedAt = 0;
        const local = locks.acquire('R').then((lock) => ((grantedAt = performance.now()), lock));
        await holder.release();
        await e.held;
        assert.equal(grantedAt, 0, 'the local caller was not handed the lock past etcdctl');
        const unlockedAt = performance.now();
        assert.equal(await e.unlock(), 0, e.output());
        const lock = await local;
        assert.ok(grantedAt >= unlockedAt);
        assert.ok(lock.fence > holder.fence);
        await lock.release();
      } finally {
        if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
      }
    },
  );

  test('a caller that times out or is aborted leaves the line; the next one is served', async () => {
    const locks = manager();
    const holder = await locks.acquire('leave');
    const timedOut = locks.acquire('leave', { timeout: 100 });
    const controller = new AbortController();
    const aborted = locks.acquire('leave', { signal: controller.signal });
    const served = locks.acquire('leave');
    await assert.rejects(timedOut, LockTimeoutError);
    controller.abort(new Error('caller gave up'));
    await assert.rejects(aborted, /caller gave up/);
    await holder.release();
    const lock = await served;
    assert.ok(lock.fence > holder.fence);
    await lock.release();
  });

  test('timeout: Infinity waits until served, in the line and in etcd’s queue (no timer that fires at once)', async () => {
    const locks = manager();
    const other = manager();
    const holder = await locks.acquire('forever');
    let settled = 0;
    const inLine = locks.acquire('forever', { timeout: Infinity }).finally(() => settled++);
    const inEtcd = other.acquire('forever', { timeout: Infinity }).finally(() => settled++);
    await eventually(async () => (await waiters(locks, 'forever')) === 1, 5_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(settled, 0, 'neither wait ended before the release');
    await holder.release();
    const first = await inEtcd; // queued in etcd before the release: served first
    await first.release();
    const second = await inLine;
    assert.ok(holder.fence < first.fence && first.fence < second.fence);
    await second.release();
  });

  test('a holder that never releases: the next caller gets the lock once its lease has ended', async () => {
    const locks = manager(1_000);
    const holder = await locks.acquire('abandoned', { autoExtend: false });
    const started = performance.now();
    const next = await locks.acquire('abandoned', { timeout: 8_000 });
    const after = performance.now() - started;
    assert.ok(after >= 900, `granted ${Math.round(after)} ms after the holder took it, its ttl is 1000 ms`);
    assert.ok(next.fence > holder.fence);
    await next.release();
    await holder.release();
    assert.equal((await locks.inspect('abandoned')).holder, null);
  });

  test('a caller asking for another lease length is served through etcd’s queue', async () => {
    const locks = manager();
    const holder = await locks.acquire('lengths', { ttl: 5_000 });
    const other = locks.acquire('lengths', { ttl: 2_000 });
    await holder.release();
    const lock = await other;
    assert.ok(lock.fence > holder.fence);
    const remaining = (await locks.inspect('lengths')).nodes[0]?.remaining ?? 0;
    assert.ok(remaining > 0 && remaining <= 2_000, `its own 2 s lease: ${remaining} ms left on the server`);
    await lock.release();
  });

  test('a hold handed over in the process, not extended, ends on the server at its own ttl', async () => {
    const locks = manager(2_000);
    const holder = await locks.acquire('handed-ttl', { autoExtend: false });
    const next = locks.acquire('handed-ttl', { autoExtend: false });
    await holder.release();
    const lock = await next;
    const heldAt = performance.now();
    assert.ok(lock.remaining() <= 2_000);
    // etcd ends a lease on a 500 ms tick: gone within ttl + 1 s, and no later.
    await eventually(async () => (await locks.inspect('handed-ttl')).holder === null, 4_000, 50);
    const gone = performance.now() - heldAt;
    assert.ok(gone < 3_000, `the key went ${Math.round(gone)} ms after the hand-over, ttl 2000 ms`);
    await lock.release();
  });
});
