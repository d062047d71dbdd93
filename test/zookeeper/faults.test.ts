// ZooKeeper's own faults, against a real 3-server ensemble: the leader killed while a lock is held and
// another waits, a server frozen, the whole ensemble out of reach of a holder, a holder paused past its
// session's timeout whose late write the fenced store rejects, and a server restarted empty. The figures
// (time to the next grant, detection time) are printed as test diagnostics; docs/zookeeper.md quotes them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, LockManager, type Lock } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { abortedWithin, eventually, timeToGrant } from '../support/harness.js';
import { startLeaseHolder } from '../support/child.js';
import { requireZooKeeper } from '../support/optional.js';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

describe('zookeeper faults (3 servers)', { skip: requireZooKeeper('ZooKeeper (the ZooKeeper backend)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  const managers: LockManager[] = [];
  const manager = (ttl = 4_000, url?: string): LockManager => {
    const m = new LockManager(url ?? ensemble.url, { ttl, acquireTimeout: 20_000 });
    managers.push(m);
    return m;
  };
  before(async () => {
    process.on('unhandledRejection', onUnhandled);
    ensemble = await startZooKeeperEnsemble({ servers: 3 });
  });
  after(async () => {
    for (const s of ensemble?.servers ?? []) if (s.isRunning()) s.resume();
    await Promise.all(managers.map((m) => m.close()));
    await ensemble?.stop();
    process.off('unhandledRejection', onUnhandled);
  });

  test('leader SIGKILL while a lock is held and another waits: the holder keeps it, the waiter gets it next', async (t) => {
    const [a, b, c] = [manager(), manager(), manager()];
    const resource = 'leader-kill';
    await timeToGrant(c, 'warm-up', 5_000);
    let holderFence = 0n;
    let killedAt = 0;
    const leader = await ensemble.waitForLeader();
    const holding = a.withLock(resource, async (lock) => {
      holderFence = lock.fence;
      killedAt = performance.now();
      await leader.kill();
      // Past the session's timeout: only the session moving to another server keeps the lock.
      await new Promise((r) => setTimeout(r, 5_000));
      assert.ok(lock.isValid(), 'still held after the election');
    });
    await eventually(() => killedAt > 0, 10_000);
    const waiting = b.acquire(resource, { timeout: 30_000 }).then(
      (lock) => ({ lock }),
      (error: unknown) => ({ error }),
    );
    const held = holding.then(
      () => ({ ok: true }),
      (error: unknown) => ({ error }),
    );
    try {
      const nextGrant = await timeToGrant(c, 'after-kill', 20_000);
      t.diagnostic(`time to the next grant after the leader's SIGKILL: ${Math.round(nextGrant)} ms`);
      assert.deepEqual(await held, { ok: true });
      const next = await waiting;
      assert.ok('lock' in next, `the waiter failed: ${String((next as { error: unknown }).error)}`);
      const lock: Lock = next.lock;
      assert.ok(lock.fence > holderFence, `fence ${lock.fence} after ${holderFence}`);
      await lock.release();
    } finally {
      await leader.restart();
      await ensemble.waitForLeader();
    }
  });

  test('a release the ensemble cannot answer is tried again until it lands: the lock does not stay stuck behind it', async (t) => {
    const leader = await ensemble.waitForLeader();
    const server = ensemble.servers.find((s) => s !== leader)!;
    // Connected to one server alone, which hangs: the release outlives its deadline and fails; the session lives on.
    const a = manager(8_000, `zk://127.0.0.1:${server.clientPort}`);
    const told: string[] = [];
    a.on('nodeError', (e) => told.push(`${e.operation} ${e.resources.join(',')} ${e.node}`));
    const lock = await a.acquire('release-unanswered');
    server.pause();
    let released;
    try {
      released = await lock.release();
    } finally {
      server.resume();
    }
    t.diagnostic(`release while its server hung: ${JSON.stringify(released)}`);
    assert.equal(released.released, 0, 'the first try failed');
    assert.deepEqual(told, [`release release-unanswered zk://127.0.0.1:${server.clientPort}`], 'the failed release was told once');
    const b = manager();
    const next = await b.acquire('release-unanswered', { timeout: 15_000 });
    assert.ok(next.fence > lock.fence);
    await next.release();
  });

  test('one server frozen (SIGSTOP), each in turn: locks are still granted and released, also while the client was connected to it', async (t) => {
    const locks = manager();
    await timeToGrant(locks, 'warm-up-2', 5_000);
    // The client is connected to one of the three (it picks at random): freezing each in turn freezes that one once.
    for (const [i, frozen] of ensemble.servers.entries()) {
      frozen.pause();
      try {
        const started = performance.now();
        for (let j = 0; j < 3; j++) {
          const lock = await locks.acquire(`frozen-${i}-${j}`, { timeout: 15_000 });
          await lock.release();
        }
        t.diagnostic(`3 acquire/release pairs with server ${frozen.id} frozen: ${Math.round(performance.now() - started)} ms`);
      } finally {
        frozen.resume();
      }
      await ensemble.waitForLeader();
    }
  });

  test('the ensemble out of reach: the holder’s signal aborts (LockLostError) before its session can expire', async (t) => {
    const locks = manager(3_000);
    const lock = await locks.acquire('unreachable', { autoExtend: true });
    await lock.extend();
    const frozenAt = performance.now();
    const sessionEnd = frozenAt + 3_000; // the ensemble cannot expire the session sooner after last hearing from it
    for (const s of ensemble.servers) s.pause();
    try {
      const reason = await abortedWithin(lock.signal, 10_000);
      const detected = performance.now();
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.ok(detected < sessionEnd, `lost ${Math.round(detected - frozenAt)} ms after the freeze, the session lasts 3000 ms`);
      t.diagnostic(`loss signalled ${Math.round(detected - frozenAt)} ms after the ensemble went out of reach (session timeout 3000 ms)`);
    } finally {
      for (const s of ensemble.servers) s.resume();
    }
    await ensemble.waitForLeader();
  });

  test('a holder paused past its session’s timeout: the session expires, the next holder gets a greater fence, the late write is rejected', async (t) => {
    const resource = 'paused-holder';
    const holder = startLeaseHolder(ensemble.url, resource);
    const { child, exited } = holder;
    try {
      const oldFence = await holder.fence();
      process.kill(child.pid!, 'SIGSTOP');
      const pausedAt = performance.now();
      // The fenced store: accepts a write only with a fence greater than the last it accepted.
      let lastFence = 0n;
      const write = (fence: bigint): boolean => (fence > lastFence ? ((lastFence = fence), true) : false);
      assert.ok(write(oldFence), 'the holder wrote once before its pause');
      const locks = manager();
      const next = await locks.acquire(resource, { timeout: 15_000 });
      t.diagnostic(
        `granted to the next holder ${Math.round(performance.now() - pausedAt)} ms after the holder froze (its session timeout: 2000 ms)`,
      );
      assert.ok(next.fence > oldFence);
      assert.ok(write(next.fence));
      process.kill(child.pid!, 'SIGCONT');
      await eventually(() => /write \d+/.test(holder.output()), 10_000);
      assert.match(holder.output(), /lost LockLostError/);
      assert.equal(write(BigInt(/write (\d+)/.exec(holder.output())![1]!)), false, 'the late write is rejected by its fence');
      await next.release();
    } finally {
      if (child.exitCode === null) process.kill(child.pid!, 'SIGCONT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('a server restarted empty and rejoined: the holder keeps its lock, fences keep rising, the server serves', async () => {
    const [a, b] = [manager(), manager()];
    const resource = 'restart-empty';
    const leader = await ensemble.waitForLeader();
    const follower = ensemble.servers.find((s) => s !== leader)!;
    const held = await a.acquire(resource, { autoExtend: true });
    const waiting = b.acquire(resource, { timeout: 30_000 }).then(
      (lock) => ({ lock }),
      (error: unknown) => ({ error }),
    );
    await follower.restartEmpty();
    await follower.waitUntilServing(15_000);
    assert.ok(held.isValid(), 'still held after the server came back empty');
    await held.release();
    const next = await waiting;
    assert.ok('lock' in next, `the waiter failed: ${String((next as { error: unknown }).error)}`);
    assert.ok(next.lock.fence > held.fence);
    await next.lock.release();
    // Through the restarted server alone: it caught up, and its fences continue the ensemble's.
    const alone = manager(4_000, `zk://127.0.0.1:${follower.clientPort}`);
    const lock = await alone.acquire(resource, { timeout: 15_000 });
    assert.ok(lock.fence > next.lock.fence, `fence ${lock.fence} after ${next.lock.fence}`);
    await lock.release();
  });

  test('no unhandled rejection came out of the client during these faults', () => {
    assert.deepEqual(unhandled, []);
  });
});
