// In-process coalescing (src/redis/local-queue.ts): a process's callers of one resource wait in line in the
// process, only the head takes part in the nodes' queue, each caller keeps its own timeout and signal, and
// FIFO holds within the process and (by arrival) across processes. Real redis-server nodes, one node set per block.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockTimeoutError, type Lock, type LockManager } from '../../src/index.js';
import { delay, eventually } from '../support/harness.js';
import { queued, readyManager, settle, uniqueResource, within, withNodeSets } from '../lock-manager/helpers.js';

const OPTIONS = { ttl: 5000, nodeTimeout: 200, acquireTimeout: 10_000 };

/** Starts `count` acquires of `resource` on `locks` one after another (arrival order known), each recording its turn in `order`. */
function callers(locks: LockManager, resource: string, count: number, order: number[], from = 0): Array<Promise<void>> {
  return Array.from({ length: count }, (_, i) =>
    locks.acquire(resource).then(async (lock) => {
      order.push(from + i);
      await lock.release();
    }),
  );
}

withNodeSets('local queue', [1, 3], (env) => {
  test('callers of one process are served in arrival order, and only one of them is in the nodes’ queue', async () => {
    const { admin } = env();
    const resource = uniqueResource('fifo');
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await locks.acquire(resource);
    const order: number[] = [];
    const waiting = callers(locks, resource, 50, order);
    await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 1), 5000);
    const queues = await queued(admin, resource);
    assert.ok(
      queues.every((q) => q.length === 1),
      `50 callers of one process: one place in each node's queue, got ${queues.map((q) => q.length).join(',')}`,
    );
    await holder.release();
    await within(Promise.all(waiting), 10_000, 'the 50 callers');
    assert.deepEqual(
      order,
      Array.from({ length: 50 }, (_, i) => i),
      'FIFO within the process',
    );
    assert.deepEqual(
      await queued(admin, resource),
      admin.map(() => []),
      'queues are empty again',
    );
  });

  test('a coalesced caller that times out leaves at its own time, without holding up the ones behind it', async () => {
    const resource = uniqueResource('timeout');
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await locks.acquire(resource);
    const head = settle(locks.acquire(resource, { timeout: 5000 }));
    const quitter = settle(locks.acquire(resource, { timeout: 200 }));
    const behind = settle(locks.acquire(resource, { timeout: 5000 }));
    const started = performance.now();
    const gaveUp = await within(quitter, 3000, 'the quitter');
    assert.equal(gaveUp.ok, false);
    assert.ok(!gaveUp.ok && gaveUp.error instanceof LockTimeoutError, 'LockTimeoutError for the caller whose time ran out');
    assert.ok(gaveUp.at - started < 1500, `it gave up ${(gaveUp.at - started).toFixed(0)} ms in, on a 200 ms timeout`);
    await holder.release();
    const first = await within(head, 3000, 'the head');
    assert.ok(first.ok, 'the head got the lock');
    await (first.value as Lock).release();
    const last = await within(behind, 3000, 'the caller behind the quitter');
    assert.ok(last.ok, 'the caller behind the quitter got the lock');
    await (last.value as Lock).release();
  });

  test('a coalesced caller whose signal aborts leaves at once; the head aborting lets the next one go', async () => {
    const resource = uniqueResource('abort');
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await locks.acquire(resource);
    const headStop = new AbortController();
    const middleStop = new AbortController();
    const head = settle(locks.acquire(resource, { signal: headStop.signal }));
    // timeout: Infinity waits until the signal aborts (no timer: setTimeout would fire at once on it).
    const middle = settle(locks.acquire(resource, { signal: middleStop.signal, timeout: Infinity }));
    const last = settle(locks.acquire(resource));
    await delay(50);
    middleStop.abort(new Error('middle gave up'));
    const m = await within(middle, 1000, 'the aborted caller');
    assert.ok(!m.ok && (m.error as Error).message === 'middle gave up', 'rejected with its signal’s reason');
    headStop.abort(new Error('head gave up'));
    const h = await within(head, 1000, 'the aborted head');
    assert.ok(!h.ok && (h.error as Error).message === 'head gave up');
    await holder.release();
    const l = await within(last, 3000, 'the last caller');
    assert.ok(l.ok, 'the last caller, now the head, got the lock');
    await (l.value as Lock).release();
  });

  test('across processes the lock goes by arrival: a caller that waited in its process keeps its place', async () => {
    const { admin } = env();
    const resource = uniqueResource('across');
    const a = await readyManager(env(), 'ioredis', OPTIONS);
    const b = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await a.acquire(resource);
    const order: string[] = [];
    const record = (name: string) => async (lock: Lock) => {
      order.push(name);
      await lock.release();
    };
    // a1 waits at the nodes for a, a2 in a's process; then b1 arrives, after both.
    const a1 = a.acquire(resource).then(record('a1'));
    const a2 = a.acquire(resource).then(record('a2'));
    await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 1), 5000);
    const b1 = b.acquire(resource).then(record('b1'));
    await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 2), 5000);
    await holder.release();
    await within(Promise.all([a1, a2, b1]), 10_000, 'the three waiters');
    assert.deepEqual(order, ['a1', 'a2', 'b1'], 'a2 arrived before b1, so it goes first although it only reached the nodes later');
  });

  test('tryAcquire never waits in line: null while a caller of this process holds the lock', async () => {
    const resource = uniqueResource('try');
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await locks.acquire(resource);
    const waiter = locks.acquire(resource);
    assert.equal(await within(locks.tryAcquire(resource), 2000, 'tryAcquire'), null);
    await holder.release();
    await (await within(waiter, 3000, 'the waiter')).release();
  });
});
