// release(), extend(), Lock.signal and `await using`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, LockReleasedError, type LockEvents } from '../../src/index.js';
import { CLIENT_KINDS, eventually } from '../support/harness.js';
import { NODE_COUNTS, readyManager, aborted, keysOf, lockPttls, lockValues, uniqueResource, within, withNodeSets } from './helpers.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 90, acquireTimeout: 5000 };

withNodeSets('release and extend', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: a release after the lease ran out never deletes the next owner's lock; extend then rejects with LOCK_LOST`, async () => {
      const { admin } = env();
      const first = await readyManager(env(), kind, OPTIONS);
      const second = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('expired');
      const lostEvents: Array<LockEvents['lost'][0]> = [];
      first.on('lost', (e) => lostEvents.push(e));

      const a = await first.acquire(resource, { ttl: 400 }); // plain acquire: nobody extends it
      const acquiredAt = performance.now();
      const reason = await aborted(a.signal, 3000);
      const lostAfter = performance.now() - acquiredAt;
      assert.ok(reason instanceof LockLostError, `abort reason ${String(reason)}`);
      assert.equal(reason.code, 'LOCK_LOST');
      assert.ok(lostAfter < 1000, `lost only after ${lostAfter} ms with a 400 ms lease`);
      assert.equal(a.isValid(), false);
      assert.equal(a.remaining(), 0);
      assert.equal(lostEvents.length, 1);
      assert.deepEqual(lostEvents[0]!.resources, [resource]);
      assert.equal(lostEvents[0]!.fence, a.fence);
      assert.equal(lostEvents[0]!.error, reason);

      // A's best-effort cleanup after the loss is in flight: let it finish, so that B takes every node.
      await eventually(async () => (await lockValues(admin, resource)).every((v) => v === null), 3000);
      const b = await second.acquire(resource, { ttl: 5000 });
      try {
        assert.ok(b.fence > a.fence, `fence ${b.fence} of B not above ${a.fence} of A`);
        assert.notEqual(b.value, a.value);
        const result = await a.release();
        assert.deepEqual(result, { released: 0, nodes: nodeCount });
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => b.value),
          "B's key must survive A's late release",
        );

        await assert.rejects(a.extend(), (e: unknown) => e instanceof LockLostError && e.code === 'LOCK_LOST');
        await assert.rejects(a.extend(1000), (e: unknown) => e instanceof LockLostError && e.code === 'LOCK_LOST');
        // the failed extend touched nothing
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => b.value),
        );
        assert.ok(b.isValid(), 'B still valid');
      } finally {
        await b.release();
      }
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
    });

    test(`${kind}: extend() on a held lock prolongs the lease on every node`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('extend');
      const lock = await locks.acquire(resource, { ttl: 1000 });
      try {
        for (const pttl of await lockPttls(admin, resource)) assert.ok(pttl > 0 && pttl <= 1000, `pttl ${pttl}`);
        await lock.extend(8000);
        for (const pttl of await lockPttls(admin, resource)) assert.ok(pttl > 7000 && pttl <= 8000, `pttl after extend(8000): ${pttl}`);
        assert.ok(lock.remaining() > 7000, `remaining ${lock.remaining()}`);
        assert.ok(lock.validUntil > Date.now() + 7000, `validUntil ${lock.validUntil}`);
        assert.ok(lock.isValid(), 'lock valid');
        // without an argument, extend renews for the current lease length (now 8000)
        await lock.extend();
        for (const pttl of await lockPttls(admin, resource)) assert.ok(pttl > 7000, `pttl after extend(): ${pttl}`);
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => lock.value),
        );
      } finally {
        await lock.release();
      }
    });

    test(`${kind}: extend() after the key was deleted behind the lock's back rejects and loses the lock`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('extend-gone');
      const lost: Array<LockEvents['lost'][0]> = [];
      locks.on('lost', (e) => lost.push(e));
      const lock = await locks.acquire(resource, { ttl: 5000 });
      await Promise.all(admin.map((a) => a.del(keysOf(resource).lock)));
      const error = await lock.extend().then(
        () => assert.fail('extend should reject'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof LockLostError, `rejected with ${String(error)}`);
      assert.equal(error.code, 'LOCK_LOST');
      assert.equal(lock.signal.aborted, true);
      assert.equal(lock.signal.reason, error);
      assert.equal(lock.isValid(), false);
      assert.equal(lost.length, 1);
      assert.equal(lost[0]!.error, error);
      // extend never re-creates a key it lost
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
      assert.deepEqual(await lock.release(), { released: 0, nodes: nodeCount });
    });

    test(`${kind}: \`await using\` releases at scope end`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('using');
      let signal: AbortSignal | undefined;
      {
        await using lock = await locks.acquire(resource);
        signal = lock.signal;
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => lock.value),
        );
        assert.equal(signal.aborted, false);
      }
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
      assert.equal(signal.aborted, true);

      // also when the block throws
      const thrown = new Error('boom');
      await assert.rejects(async () => {
        await using lock = await locks.acquire(resource);
        assert.ok(lock.isValid(), 'lock valid');
        throw thrown;
      }, thrown);
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
    });

    test(`${kind}: release() aborts lock.signal with LOCK_RELEASED, is idempotent and returns the same counts`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('release-twice');
      const lock = await locks.acquire(resource);
      assert.equal(lock.signal.aborted, false);
      const reasonPromise = aborted(lock.signal, 2000);
      const [r1, r2] = await Promise.all([lock.release(), lock.release()]);
      const reason = await reasonPromise;
      assert.ok(reason instanceof LockReleasedError, `abort reason ${String(reason)}`);
      assert.equal(reason.code, 'LOCK_RELEASED');
      assert.deepEqual(r1, { released: nodeCount, nodes: nodeCount });
      assert.deepEqual(r2, r1);
      const r3 = await lock.release();
      assert.deepEqual(r3, r1, 'a later release reports the same counts');
      assert.equal(lock.isValid(), false);
      assert.equal(lock.remaining(), 0);
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );

      // A released lock cannot be extended, and the failed extend re-creates nothing.
      await assert.rejects(lock.extend(), (e: unknown) => e instanceof LockLostError && e.code === 'LOCK_LOST');
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );

      // Releasing again after someone else took the resource leaves their key alone.
      const next = await within(locks.acquire(resource), 3000, 'acquire after release');
      try {
        assert.deepEqual(await lock.release(), r1);
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => next.value),
        );
      } finally {
        await next.release();
      }
    });
  }
});
