// tryAcquire, acquire timeouts, abort signals, and the notification handoff.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockTimeoutError, type LockEvents } from '../../src/index.js';
import { CLIENT_KINDS, eventually } from '../support/harness.js';
import { NODE_COUNTS, readyManager, keysOf, lockValues, settle, subscribers, uniqueResource, within, withNodeSets } from './helpers.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 100, acquireTimeout: 5000 };
const HANDOFFS = 3;
const HANDOFF_LIMIT_MS = 100;

withNodeSets('waiting', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: tryAcquire returns null while held and a Lock when free`, async () => {
      const { admin } = env();
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('try');
      const holder = await holderManager.acquire(resource);
      try {
        const started = performance.now();
        assert.equal(await locks.tryAcquire(resource), null);
        assert.equal(await holderManager.tryAcquire(resource), null, 'the same manager does not get it twice either');
        assert.ok(performance.now() - started < 1000, 'tryAcquire does not wait');
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => holder.value),
        );
      } finally {
        await holder.release();
      }
      const lock = await locks.tryAcquire(resource);
      assert.ok(lock, 'free: tryAcquire should return a Lock');
      try {
        assert.deepEqual(lock.resources, [resource]);
        assert.ok(lock.fence > holder.fence, `fence ${lock.fence} not above ${holder.fence}`);
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => lock.value),
        );
      } finally {
        await lock.release();
      }
    });

    test(`${kind}: acquire with a small timeout rejects with ACQUIRE_TIMEOUT after about the timeout`, async () => {
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('timeout');
      const holder = await holderManager.acquire(resource, { ttl: 10_000 });
      try {
        const timeout = 300;
        const started = performance.now();
        const outcome = await within(settle(locks.acquire(resource, { timeout })), 5000, 'acquire with timeout 300');
        const elapsed = outcome.at - started;
        assert.equal(outcome.ok, false);
        const error = (outcome as { error: unknown }).error;
        assert.ok(error instanceof LockTimeoutError, `rejected with ${String(error)}`);
        assert.equal(error.code, 'ACQUIRE_TIMEOUT');
        assert.equal(error.timeout, timeout);
        assert.deepEqual(error.resources, [resource]);
        assert.ok(elapsed >= timeout - 5, `rejected after ${elapsed.toFixed(1)} ms, before the ${timeout} ms timeout`);
        assert.ok(elapsed < timeout + 700, `rejected only after ${elapsed.toFixed(1)} ms`);
        assert.ok(holder.isValid(), 'holder still valid');
      } finally {
        await holder.release();
      }
    });

    test(`${kind}: abort() rejects a waiting acquire promptly with the signal's reason and leaves nothing behind`, async () => {
      const { admin } = env();
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('abort');
      const holder = await holderManager.acquire(resource, { ttl: 10_000 });
      const controller = new AbortController();
      const waiting = settle(locks.acquire(resource, { timeout: 30_000, signal: controller.signal }));
      try {
        // the waiter is subscribed, i.e. past its first attempt and waiting
        await eventually(async () => (await subscribers(admin, resource)).every((n) => n === 1), 5000);
        const reason = new Error('caller gave up');
        const abortedAt = performance.now();
        controller.abort(reason);
        const outcome = await within(waiting, 2000, 'aborted acquire');
        assert.equal(outcome.ok, false);
        assert.equal((outcome as { error: unknown }).error, reason, "rejects with the signal's own reason");
        const latency = outcome.at - abortedAt;
        assert.ok(latency < 100, `rejected ${latency.toFixed(1)} ms after abort()`);
        // the waiter's subscription is dropped
        await eventually(async () => (await subscribers(admin, resource)).every((n) => n === 0), 2000);
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => holder.value),
        );
      } finally {
        await holder.release();
      }
      const after = await locks.tryAcquire(resource);
      assert.ok(after, 'the resource is free after the aborted wait');
      await after.release();
    });

    test(`${kind}: abort during an attempt on a free resource leaves no lock behind`, async (t) => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      for (let i = 0; i < 5; i++) {
        const resource = uniqueResource('abort-free');
        const controller = new AbortController();
        const reason = new Error(`abort ${i}`);
        const pending = settle(locks.acquire(resource, { signal: controller.signal }));
        // abort while the first attempt is on the wire (after 0..4 event-loop turns)
        for (let turn = 0; turn < i; turn++) await new Promise((r) => setImmediate(r));
        controller.abort(reason);
        const outcome = await within(pending, 2000, 'acquire aborted mid-attempt');
        if (outcome.ok) {
          // the attempt won the race against abort(); it must still be a usable lock
          await outcome.value.release();
        } else {
          assert.equal(outcome.error, reason);
        }
        // An attempt abandoned on the wire may still land; its lock is then released
        // as soon as its reply arrives. Eventually the resource is free again.
        let tries = 0;
        await eventually(async () => {
          tries++;
          const free = await locks.tryAcquire(resource);
          if (!free) return false;
          await free.release();
          return true;
        }, 2000);
        if (tries > 1) t.diagnostic(`abort after ${i} turn(s): free again after ${tries} tryAcquire calls`);
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map(() => null),
        );
      }
    });

    test(`${kind}: a pre-aborted signal rejects without touching Redis`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('pre-aborted');
      const reason = new Error('already cancelled');
      const started = performance.now();
      await assert.rejects(locks.acquire(resource, { signal: AbortSignal.abort(reason) }), (e: unknown) => e === reason);
      await assert.rejects(
        locks.withLock(resource, async () => assert.fail('fn must not run'), { signal: AbortSignal.abort(reason) }),
        (e: unknown) => e === reason,
      );
      // default reason: an AbortError DOMException
      const plain = new AbortController();
      plain.abort();
      await assert.rejects(locks.acquire(resource, { signal: plain.signal }), (e: unknown) => e === plain.signal.reason);
      assert.ok(performance.now() - started < 100, 'no waiting');
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
      const fences = await Promise.all(admin.map((a) => a.get(keysOf(resource).fence)));
      assert.deepEqual(
        fences,
        admin.map(() => null),
        'no attempt was made: no counter was incremented',
      );
    });

    test(`${kind}: with no release to hear of, a waiter retries when the holder's lease runs out, not after its backoff`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, { ...OPTIONS, retry: { minDelay: 5000, maxDelay: 5000, jitter: 'none' } });
      const resource = uniqueResource('expiry-wait');
      const retries: Array<LockEvents['retry'][0]> = [];
      locks.on('retry', (e) => retries.push(e));
      // A holder that dies without releasing: its key simply expires, and nobody publishes.
      await Promise.all(admin.map((a) => a.set(keysOf(resource).lock, 'crashed-holder', 'PX', 600)));
      const started = performance.now();
      const outcome = await within(settle(locks.acquire(resource, { timeout: 10_000 })), 8000, 'waiter');
      const waited = outcome.at - started;
      assert.ok(outcome.ok, `waiter failed: ${String((outcome as { error?: unknown }).error)}`);
      assert.ok(waited >= 550, `acquired after ${waited.toFixed(0)} ms, before the 600 ms lease ran out`);
      assert.ok(waited < 1500, `acquired only after ${waited.toFixed(0)} ms (lease 600 ms, backoff 5000 ms)`);
      assert.ok(retries.length >= 1, 'a retry event');
      assert.equal(retries.at(-1)!.reason, 'timer');
      await outcome.value.release();
    });

    test(`${kind}: a waiter acquires within a few ms of the holder's release (notification, not polling)`, async (t) => {
      const { admin } = env();
      const holderManager = await readyManager(env(), kind, OPTIONS);
      // Backoff alone would make the waiter sleep exactly 2 s between attempts.
      const waiterManager = await readyManager(env(), kind, {
        ...OPTIONS,
        retry: { minDelay: 2000, maxDelay: 2000, jitter: 'none' },
      });
      const retries: Array<LockEvents['retry'][0]> = [];
      const acquired: Array<LockEvents['acquired'][0]> = [];
      waiterManager.on('retry', (e) => retries.push(e));
      waiterManager.on('acquired', (e) => acquired.push(e));
      const latencies: number[] = [];
      let raced = 0;
      // A waiter makes two attempts before it sleeps (before and after subscribing);
      // a release that lands before its second one is a race, not a wake-up: such a
      // sample is discarded and the handoff repeated (bounded).
      for (let round = 0; latencies.length < HANDOFFS && round < HANDOFFS * 3; round++) {
        const resource = uniqueResource('handoff');
        const holder = await holderManager.acquire(resource, { ttl: 10_000 });
        const waiting = settle(waiterManager.acquire(resource, { timeout: 10_000 }));
        let releasedAt = 0;
        try {
          await eventually(async () => (await subscribers(admin, resource)).every((n) => n === 1), 5000);
        } finally {
          releasedAt = performance.now();
          await holder.release();
        }
        const outcome = await within(waiting, 5000, 'waiter');
        assert.ok(outcome.ok, `waiter failed: ${String((outcome as { error?: unknown }).error)}`);
        const lock = outcome.value;
        try {
          assert.deepEqual(
            await lockValues(admin, resource),
            admin.map(() => lock.value),
          );
          assert.ok(lock.fence > holder.fence, `fence ${lock.fence} not above ${holder.fence}`);
          const event = acquired.find((e) => e.value === lock.value);
          assert.ok(event, 'an acquired event for the waiter');
          if (event.attempts <= 2) {
            raced++;
            continue;
          }
          const wakeUps = retries.filter((r) => r.resources[0] === resource);
          // it slept, and what woke it was the release notification, not the 2 s timer
          assert.deepEqual(
            wakeUps.map((r) => r.reason),
            ['notified'],
          );
          latencies.push(outcome.at - releasedAt);
        } finally {
          await lock.release();
        }
      }
      t.diagnostic(
        `handoff latency on ${nodeCount} node(s) with ${kind}: ${latencies.map((l) => `${l.toFixed(1)} ms`).join(', ')}` +
          (raced ? ` (${raced} sample(s) discarded: released before the waiter slept)` : ''),
      );
      assert.equal(latencies.length, HANDOFFS, `only ${latencies.length} handoffs to a sleeping waiter in ${HANDOFFS * 3} tries`);
      for (const l of latencies) assert.ok(l < HANDOFF_LIMIT_MS, `handoff took ${l.toFixed(1)} ms (limit ${HANDOFF_LIMIT_MS} ms)`);
    });
  }
});
