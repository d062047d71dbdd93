// Work that starts only when something asks for it: an uncontended acquire + release makes no AbortController
// and arms no wake-up, yet every way of seeing a loss still sees it (a signal read before or after it, a 'lost'
// listener added while the lock is held, release, withLock), and leases that ran out unwatched do not pile up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, LockReleasedError, type Lock, type LockEvents } from '../../src/index.js';
import { delay } from '../support/harness.js';
import { aborted, keysOf, readyManager, uniqueResource, within, withNodeSets } from './helpers.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 50, acquireTimeout: 5000 };

withNodeSets('lazy lock upkeep', [1], (env) => {
  test('an uncontended acquire + release constructs no AbortController and arms no timer of its own', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    await (await locks.acquire(uniqueResource('warm'))).release();
    const Real = globalThis.AbortController;
    const realSetTimeout = globalThis.setTimeout;
    let made = 0;
    let timers = 0;
    globalThis.AbortController = class extends Real {
      constructor() {
        super();
        made++;
      }
    };
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      // The lock upkeep's timers are the scheduler's (the Redis client's request deadlines have their own); its
      // compiled copy under npm test (scripts/test-build.mjs), the source through tsx.
      if (/scheduler\.[jt]s:/.test(new Error().stack ?? '')) timers++;
      return realSetTimeout(...args);
    }) as typeof setTimeout;
    try {
      for (let i = 0; i < 20; i++) await (await locks.acquire(uniqueResource('pair'))).release();
      await locks.withLock(uniqueResource('pair'), () => undefined, { autoExtend: false });
    } finally {
      globalThis.AbortController = Real;
      globalThis.setTimeout = realSetTimeout;
    }
    assert.equal(made, 0, 'AbortControllers made by 20 pairs and a withLock');
    assert.equal(timers, 0, 'scheduler timers armed by 21 pairs');
    // The signal still exists when asked for: made then, already aborted with the release's reason.
    const lock = await locks.acquire(uniqueResource('pair'));
    await lock.release();
    assert.ok(lock.signal.reason instanceof LockReleasedError, `reason ${String(lock.signal.reason)}`);
  });

  test('a signal first read after the lease ran out unwatched is already aborted with the LockLostError', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const lock = await locks.acquire(uniqueResource('late-read'), { ttl: 200 });
    await delay(lock.remaining() + 20); // the lease's own end: nothing to wait on, nobody watches it
    assert.equal(lock.isValid(), false);
    const { signal } = lock;
    assert.equal(signal.aborted, true);
    assert.ok(signal.reason instanceof LockLostError, `reason ${String(signal.reason)}`);
    assert.equal(lock.lostError, signal.reason);
    // release afterwards changes nothing: still lost, not released
    await lock.release();
    assert.equal(lock.signal.reason, lock.lostError);
  });

  test('a signal read while held aborts when the lease runs out, with no listener at all', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const lock = await locks.acquire(uniqueResource('early-read'), { ttl: 300 });
    const reason = await aborted(lock.signal, 3000);
    assert.ok(reason instanceof LockLostError, `reason ${String(reason)}`);
    assert.equal(lock.remaining(), 0);
    assert.equal(lock.lostError, reason);
  });

  test("a 'lost' listener added while a lock is held hears of its loss as it happens", async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const resource = uniqueResource('late-listener');
    const lock = await locks.acquire(resource, { ttl: 300 });
    const lost = within(
      new Promise<LockEvents['lost'][0]>((resolve) => locks.on('lost', (e) => e.resources[0] === resource && resolve(e))),
      3000,
      "'lost' event",
    );
    const event = await lost;
    assert.equal(event.fence, lock.fence);
    assert.ok(event.error instanceof LockLostError);
    assert.equal(lock.lostError, event.error);
  });

  test('withLock without auto-extension still rejects with LockLostError when fn outlasts the lease', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    await assert.rejects(
      locks.withLock(
        uniqueResource('outlast'),
        async (lock) => {
          await delay(lock.remaining() + 20); // fn's work outlasting the lease is the point of the test
          return 'done';
        },
        { ttl: 200, autoExtend: false },
      ),
      LockLostError,
    );
  });

  test('leases that ran out unwatched are swept from the held set: close() releases only the locks still held', async () => {
    const { admin } = env();
    // a generous nodeTimeout: a thousand rounds in a row, and a busy machine must not fail one of them
    const locks = await readyManager(env(), 'ioredis', { ...OPTIONS, nodeTimeout: 300, acquireTimeout: 10_000 });
    const ttl = 1000;
    // 1023 locks, then the 1024th acquire (the sweep's threshold) after they have all run out
    // (in batches: a thousand rounds at once on a busy machine would outlast their own leases)
    const early: Lock[] = [];
    while (early.length < 1023) {
      const batch = Math.min(31, 1023 - early.length);
      early.push(...(await Promise.all(Array.from({ length: batch }, () => locks.acquire(uniqueResource('swept'), { ttl })))));
    }
    await delay(Math.max(...early.map((l) => l.remaining())) + 20);
    const last = await locks.acquire(uniqueResource('kept'), { ttl: 10_000 });
    const released: Array<LockEvents['released'][0]> = [];
    locks.on('released', (e) => released.push(e));
    await locks.close();
    assert.deepEqual(
      released.map((e) => e.resources[0]),
      [last.resources[0]],
    );
    assert.equal(await admin[0]!.exists(keysOf(last.resources[0]!).lock), 0);
    for (const lock of early) assert.ok(lock.lostError instanceof LockLostError);
  });
});
