// Event payloads, and close().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockError, LockReleasedError, ManagerClosedError, type LockEvents } from '../../src/index.js';
import { CLIENT_KINDS, eventually } from '../support/harness.js';
import {
  NODE_COUNTS,
  aborted,
  lockValues,
  queued,
  readyManager,
  settle,
  subscribers,
  uniqueResource,
  within,
  withNodeSets,
} from './helpers.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 100, acquireTimeout: 5000 };

type Recorded = { [E in keyof LockEvents]: Array<LockEvents[E][0]> };

withNodeSets('events and close', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: acquired, extended, retry and released events name the resources`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const seen: Recorded = {
        acquired: [],
        released: [],
        extended: [],
        lost: [],
        nodeError: [],
        retry: [],
        nodeQuarantined: [],
        nodeRepaired: [],
      };
      for (const name of Object.keys(seen) as Array<keyof LockEvents>) {
        locks.on(name, (...args: LockEvents[typeof name]) => (seen[name] as unknown[]).push(args[0]));
      }
      const a = uniqueResource('ev-a');
      const b = uniqueResource('ev-b');

      // acquired / extended / released, for a multi-resource lock
      const lock = await locks.acquire([b, a]);
      const sorted = [a, b].sort();
      assert.equal(seen.acquired.length, 1);
      const acquired = seen.acquired[0]!;
      assert.deepEqual(acquired.resources, sorted);
      assert.equal(acquired.fence, lock.fence);
      assert.equal(acquired.value, lock.value);
      assert.equal(acquired.attempts, 1);
      assert.ok(acquired.waited >= 0, `waited ${acquired.waited}`);

      await lock.extend(3000);
      assert.equal(seen.extended.length, 1);
      const extended = seen.extended[0]!;
      assert.deepEqual(extended.resources, sorted);
      assert.equal(extended.fence, lock.fence);
      assert.equal(extended.ttl, 3000);
      assert.ok(extended.remaining > 2000 && extended.remaining <= 3000, `remaining ${extended.remaining}`);

      await lock.release();
      assert.equal(seen.released.length, 1);
      assert.deepEqual(seen.released[0], { resources: sorted, fence: lock.fence, released: nodeCount, nodes: nodeCount });

      // retry: a waiter with a short timeout behind a holder that never releases wakes on its timer
      const holder = await holderManager.acquire(a, { ttl: 10_000 });
      await assert.rejects(
        within(locks.acquire(a, { timeout: 300, retry: { minDelay: 40, maxDelay: 40, jitter: 'none' } }), 5000, 'acquire'),
        (e: unknown) => e instanceof LockError && e.code === 'ACQUIRE_TIMEOUT',
      );
      assert.ok(seen.retry.length >= 2, `${seen.retry.length} retry events in 300 ms with 40 ms backoff`);
      for (const [i, r] of seen.retry.entries()) {
        assert.deepEqual(r.resources, [a]);
        assert.equal(r.attempt, i + 1);
        assert.equal(r.reason, 'timer');
        assert.ok(r.waited >= 0 && r.waited <= 400, `waited ${r.waited}`);
        if (i > 0) assert.ok(r.waited >= seen.retry[i - 1]!.waited, 'waited grows');
      }
      assert.equal(seen.acquired.length, 1, 'no acquired event for the timed-out acquire');

      // acquired after waiting: attempts counts every try
      const waiting = settle(locks.acquire(a, { timeout: 5000 }));
      await eventually(async () => (await subscribers(env().admin, a)).every((n) => n === 1), 5000);
      await holder.release();
      const outcome = await within(waiting, 5000, 'waiter');
      assert.ok(outcome.ok, `waiter failed: ${String((outcome as { error?: unknown }).error)}`);
      const waiter = outcome.value;
      const second = seen.acquired[1]!;
      assert.deepEqual(second.resources, [a]);
      assert.equal(second.value, waiter.value);
      assert.equal(second.fence, waiter.fence);
      assert.ok(second.attempts >= 2, `attempts ${second.attempts}`);
      await waiter.release();
      assert.deepEqual(seen.released.at(-1), { resources: [a], fence: waiter.fence, released: nodeCount, nodes: nodeCount });
      assert.equal(seen.lost.length, 0);
      assert.equal(seen.nodeError.length, 0);
    });

    test(`${kind}: close() releases held locks, rejects a pending acquire promptly, and rejects later calls`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const r1 = uniqueResource('close-1');
      const r2 = uniqueResource('close-2');
      const r3 = uniqueResource('close-3');
      const contested = uniqueResource('close-contested');
      const released: Array<LockEvents['released'][0]> = [];
      locks.on('released', (e) => released.push(e));

      const single = await locks.acquire(r1);
      const multi = await locks.acquire([r2, r3]);
      const alreadyReleased = await locks.acquire(uniqueResource('close-done'));
      await alreadyReleased.release();
      const holder = await holderManager.acquire(contested, { ttl: 10_000 });
      const pending = settle(locks.acquire(contested, { timeout: 30_000 }));
      await eventually(async () => (await subscribers(admin, contested)).every((n) => n === 1), 5000);

      const closeStarted = performance.now();
      const closing = locks.close();
      const outcome = await within(pending, 2000, 'pending acquire during close');
      const rejectedAfter = outcome.at - closeStarted;
      assert.equal(outcome.ok, false);
      const error = (outcome as { error: unknown }).error;
      assert.ok(error instanceof ManagerClosedError, `pending acquire rejected with ${String(error)}`);
      assert.ok(error instanceof LockError, 'a LockError');
      assert.ok(rejectedAfter < 100, `pending acquire rejected ${rejectedAfter.toFixed(1)} ms after close()`);
      await within(closing, 3000, 'close()');
      // The interrupted waiter left the queue before close() resolved: its place must not hold up the other manager.
      assert.deepEqual(
        await queued(admin, contested),
        admin.map(() => []),
        'no waiter left queued by the closed manager',
      );

      // locks still held were released: keys gone, signals aborted, released events
      for (const r of [r1, r2, r3])
        assert.deepEqual(
          await lockValues(admin, r),
          admin.map(() => null),
          `${r} released by close()`,
        );
      assert.ok((await aborted(single.signal, 100)) instanceof LockReleasedError, 'single lock signal aborted with LOCK_RELEASED');
      assert.ok((await aborted(multi.signal, 100)) instanceof LockReleasedError, 'multi lock signal aborted with LOCK_RELEASED');
      assert.equal(single.isValid(), false);
      const releasedSets = released.map((e) => e.resources.join(','));
      assert.ok(releasedSets.includes(r1), `released events: ${releasedSets.join(' | ')}`);
      assert.ok(releasedSets.includes([r2, r3].sort().join(',')), `released events: ${releasedSets.join(' | ')}`);
      // the other manager's lock is untouched, and the closed manager's subscriptions are gone
      assert.deepEqual(
        await lockValues(admin, contested),
        admin.map(() => holder.value),
      );
      await eventually(async () => (await subscribers(admin, contested)).every((n) => n === 0), 2000);

      // later calls reject at once
      const isClosed = (e: unknown): boolean => e instanceof ManagerClosedError && e.code === 'CLOSED';
      await assert.rejects(locks.acquire(uniqueResource('after-close')), isClosed);
      await assert.rejects(locks.tryAcquire(uniqueResource('after-close')), isClosed);
      await assert.rejects(
        locks.withLock(uniqueResource('after-close'), async () => assert.fail('fn must not run')),
        isClosed,
      );
      await assert.rejects(locks.inspect(r1), isClosed);
      await assert.rejects(locks.forceRelease(r1), isClosed);
      // close() is idempotent, and a release after close does not throw
      await within(locks.close(), 1000, 'second close()');
      assert.deepEqual(await single.release(), { released: nodeCount, nodes: nodeCount });

      // the other manager is unaffected
      await holder.release();
      const after = await holderManager.tryAcquire(contested);
      assert.ok(after, 'the other manager still works');
      await after.release();
    });

    test(`${kind}: close() during a waiter's first attempt: the waiter has left the nodes' queue when close() resolves`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const contested = uniqueResource('close-first-attempt');
      const holder = await holderManager.acquire(contested, { ttl: 10_000 });
      // Its first attempt finds the lock held and takes a place in each node's queue; close() comes before the reply.
      const pending = assert.rejects(locks.acquire(contested, { timeout: 30_000 }), ManagerClosedError);
      await within(locks.close(), 3000, 'close()');
      await pending;
      assert.deepEqual(
        await queued(admin, contested),
        admin.map(() => []),
        "the interrupted waiter's place must not hold up the holder's next waiter until it lapses",
      );
      await holder.release();
    });

    test(`${kind}: close() during withLock releases the lock; fn's signal aborts`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('close-withlock');
      let entered: () => void = () => undefined;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      let reason: unknown;
      const running = settle(
        locks.withLock(resource, async (lock) => {
          entered();
          reason = await aborted(lock.signal, 3000);
          return 'done';
        }),
      );
      await within(inside, 3000, 'withLock entering fn');
      await within(locks.close(), 3000, 'close()');
      const outcome = await within(running, 3000, 'withLock after close');
      assert.ok(reason instanceof LockReleasedError, `signal reason ${String(reason)}`);
      // Whether withLock resolves or rejects here is the implementation's call; it must settle.
      assert.ok(outcome.ok ? outcome.value === 'done' : outcome.error instanceof LockError, 'settles with fn value or a LockError');
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
    });
  }
});
