// In-process coalescing (src/redis/local-queue.ts): a process's callers of one resource wait in line in the
// process, only the head takes part in the nodes' queue, each caller keeps its own timeout and signal, and
// FIFO holds within the process and (by arrival) across processes. Real redis-server nodes, one node set per block.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockTimeoutError, type Lock, type LockManager } from '../../src/index.js';
import { acquireCalls } from './fixtures/acquire-calls.js';
import { delay, eventually } from '../support/harness.js';
import {
  lockPttls,
  lockValues,
  queued,
  readyManager,
  settle,
  uniqueResource,
  within,
  withNodeSets,
  scriptCalls,
} from '../lock-manager/helpers.js';

const OPTIONS = { ttl: 5000, nodeTimeout: 200, acquireTimeout: 10_000 };
/** Waiters wake only when a release names them: their backoff outlasts the test. */
const SLOW = { ...OPTIONS, retry: { minDelay: 10_000, maxDelay: 10_000, jitter: 'none' as const } };

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

  test('the release grants the next caller of its own process the lock: one script call per node for the hand-over', async () => {
    const { admin } = env();
    const resource = uniqueResource('in-release');
    // Waiters wake only when a release names them (SLOW): every script call is counted.
    const locks = await readyManager(env(), 'ioredis', SLOW);
    const other = await readyManager(env(), 'ioredis', SLOW);
    const holder = await other.acquire(resource);
    // a waits at the nodes (queued behind holder), b in a's process behind a. a's manager was not subscribed
    // yet, so a's first attempt is followed by one more as soon as its subscription is in place (wait.ts: a
    // release may have slipped in between): both are done before the count starts.
    const start = await scriptCalls(admin);
    // a's ttl is at least its queue lease (20.8 s with this backoff): it may take a handed grant up without a
    // round (a shorter ttl confirms with one, wait.ts).
    const a = locks.acquire(resource, { ttl: 30_000 });
    await eventually(async () => (await scriptCalls(admin)).every((n, i) => n - (start[i] as number) === 2), 5000);
    assert.ok(
      (await queued(admin, resource)).every((q) => q.length === 1),
      'a is queued on every node',
    );
    const b = locks.acquire(resource);
    const before = await scriptCalls(admin);
    await holder.release();
    const lockA = await within(a, 3000, 'a');
    // b is parked behind a (local-queue.ts): a's release grants it there and then (release.lua, redlock.ts releaseTo).
    await lockA.release();
    const lockB = await within(b, 3000, 'b');
    const calls = (await scriptCalls(admin)).map((n, i) => n - (before[i] as number));
    // Per node: holder's release (which granted a the lock: a took up the grant it was told, handed-grant.ts),
    // a's release; b made no round of its own. a's top-up (Lock.topUp) starts once a's caller yields: ahead of a's
    // release where that release went out in a later turn (on three nodes), not at all where it went out at once
    // (on one). A node whose message had not reached a when a quorum's had (a woke at a quorum) also saw a leave
    // its queue there (dequeue.lua, in the background).
    assert.ok(
      calls.every((n) => n >= 2 && n <= 4),
      `script calls per node: ${JSON.stringify(calls)}`,
    );
    // A round of a's own would have issued a fence of its own on top of the one the holder's release issued.
    assert.equal(lockA.fence, holder.fence + 1n, `a's fence is the one the release issued: ${lockA.fence}`);
    assert.ok(lockB.isValid(), 'b holds a valid lock');
    assert.ok(lockB.fence > lockA.fence, `b's fence ${lockB.fence} > a's ${lockA.fence}`);
    assert.deepEqual(
      await lockValues(admin, resource),
      admin.map(() => lockB.value),
      'b holds every node',
    );
    const pttls = await lockPttls(admin, resource);
    assert.ok(
      pttls.every((ms) => ms > 4_000 && ms <= 5_000),
      `b's own ttl (5000): ${pttls.join(', ')} ms`,
    );
    await lockB.extend(5_000); // throws if a quorum did not extend it
    assert.ok(lockB.isValid(), 'b extended its lock');
    assert.equal((await lockB.release()).released, admin.length);
  });

  test('a release whose next caller comes after another process’s waiter takes its place in line: no round of its own', async () => {
    const { admin, nodes } = env();
    const resource = uniqueResource('queued-by-release');
    const [locks, other, third] = await Promise.all([1, 2, 3].map(() => readyManager(env(), 'ioredis', SLOW)));
    const holder = await (third as LockManager).acquire(resource);
    // In line at the nodes: a (this process), then q (another); s waits in a's process, behind a.
    const a = (locks as LockManager).acquire(resource, { ttl: 30_000 });
    await eventually(async () => (await queued(admin, resource)).every((line) => line.length === 1), 5000);
    const q = (other as LockManager).acquire(resource, { ttl: 30_000 });
    await eventually(async () => (await queued(admin, resource)).every((line) => line.length === 2), 5000);
    const s = (locks as LockManager).acquire(resource, { ttl: 30_000 });
    let lockQ: Lock | undefined;
    let lockS: Lock | undefined;
    const calls = await acquireCalls(nodes.urls, async () => {
      await holder.release();
      // a holds the lock, and s is parked behind it (local-queue.ts) until a's release. That release hands the
      // lock to q, which arrived before s, and puts s in line behind it under s's own ticket.
      await (await within(a, 3000, 'a')).release();
      lockQ = await within(q, 3000, 'q');
      await eventually(async () => (await queued(admin, resource)).every((line) => line.length === 1), 3000);
      await lockQ.release();
      lockS = await within(s, 3000, 's');
    });
    assert.ok(lockQ && lockS);
    assert.deepEqual(
      calls.map((seen) => seen.filter(([token]) => token === lockS?.value).length),
      admin.map(() => 0),
      'the acquire script never ran for s: a’s release queued it, and it took up the grant q’s release handed it',
    );
    // Dated from the release that queued it: a round of its own would have issued a fence above q's release's one.
    assert.equal(lockS.fence, lockQ.fence + 1n, `s's fence is the one q's release issued: ${lockS.fence}`);
    await eventually(async () => (await lockValues(admin, resource)).every((value) => value === lockS?.value), 3000);
    // A node whose release came after s woke on a quorum hands s its key there a moment later.
    await eventually(async () => (await queued(admin, resource)).every((line) => line.length === 0), 3000);
    assert.equal((await lockS.release()).released, admin.length);
  });

  test('a lock taken up from a grant a release handed it is extended to its own ttl once its caller has it', async () => {
    const { admin } = env();
    const resource = uniqueResource('top-up');
    const locks = await readyManager(env(), 'ioredis', SLOW);
    const other = await readyManager(env(), 'ioredis', SLOW);
    const holder = await other.acquire(resource);
    const a = locks.acquire(resource, { ttl: 30_000 });
    await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 1), 5000);
    await holder.release();
    const lockA = await within(a, 3000, 'a');
    // The handed key's lease is what was left of a's place in line (the queue lease, 20.8 s with this backoff);
    // the top-up (Lock.topUp) makes it a's own 30 s on every node.
    await eventually(async () => (await lockPttls(admin, resource)).every((ms) => ms > 25_000), 3000);
    // The nodes hold the extension before its replies are read: a's own view follows once they are.
    await eventually(() => lockA.remaining() > 25_000, 3000);
    assert.equal((await lockA.release()).released, admin.length);
  });

  test('the top-up comes after the caller: one that blocks its event loop past the handed key’s validity loses the lock', async () => {
    const { admin } = env();
    // A queue lease of 2 × 1,000 + 4 × 100 = 2,400 ms: a place renewed every 500-1,000 ms, a handed key that lasts at most that.
    const SHORT_PLACE = { ...OPTIONS, nodeTimeout: 100, retry: { minDelay: 1_000, maxDelay: 1_000, jitter: 'none' as const } };
    const locks = await readyManager(env(), 'ioredis', SHORT_PLACE);
    const other = await readyManager(env(), 'ioredis', SHORT_PLACE);
    const lost: string[][] = [];
    locks.on('lost', ({ resources }) => lost.push([...resources]));
    // A release that meets the waiter's renewal on its way is confirmed by a round (its grant cannot be dated):
    // such a try is given back and made again, up to three times.
    let taken: { resource: string; lock: Lock; handed: number } | undefined;
    for (let attempt = 0; attempt < 3 && !taken; attempt++) {
      const resource = uniqueResource('top-up-late');
      const holder = await other.acquire(resource);
      // a's first attempt, and the one it makes once subscribed (wait.ts), both done before the release.
      const start = await scriptCalls(admin);
      // The caller's own work, in the continuation of its acquire (the test's own awaits below may come a turn
      // later, after the top-up went out): taken up from the grant (no round of its own), the lock counts the
      // handed key's validity, not 30 s, until its top-up goes out; a synchronous stretch longer than that
      // validity (a bounded busy wait) comes first.
      const a = locks.acquire(resource, { ttl: 30_000 }).then((lock) => {
        const handed = lock.remaining();
        if (handed <= 2_400) {
          const until = performance.now() + handed + 300;
          while (performance.now() < until);
        }
        return { lock, handed };
      });
      await eventually(async () => (await scriptCalls(admin)).every((n, i) => n - (start[i] as number) >= 2), 5000);
      await holder.release();
      const { lock, handed } = await within(a, 6000, 'a');
      if (handed <= 2_400) taken = { resource, lock, handed };
      else await lock.release();
    }
    assert.ok(taken, 'a took a handed grant up without a round in one of three tries');
    const { resource, lock: lockA, handed } = taken;
    assert.ok(handed > 0, `a's handed validity: ${handed} ms`);
    await eventually(() => lost.length === 1, 3000);
    assert.deepEqual(lost, [[resource]]);
    assert.ok(!lockA.isValid() && lockA.signal.aborted, 'the lock says it is lost');
    // Its key ran out on the nodes: the next caller gets the lock, with a fence above a's.
    const next = await within(other.acquire(resource), 3000, 'the next caller');
    assert.ok(next.fence > lockA.fence, `fences ${lockA.fence} then ${next.fence}`);
    await next.release();
  });

  test('a caller granted the lock by a release whose signal aborts at once: the lock goes back', async () => {
    const { admin } = env();
    const resource = uniqueResource('in-release-abort');
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const other = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await other.acquire(resource);
    const a = locks.acquire(resource);
    await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 1), 5000);
    const stop = new AbortController();
    const b = settle(locks.acquire(resource, { signal: stop.signal }));
    await holder.release();
    const lockA = await within(a, 3000, 'a');
    const released = lockA.release();
    // b has left the line (its turn began with the release) and waits for the release's reply: abort now.
    stop.abort(new Error('b gave up'));
    const gaveUp = await within(b, 3000, 'b');
    assert.ok(!gaveUp.ok && (gaveUp.error as Error).message === 'b gave up', 'b rejects with its reason');
    await released;
    await eventually(async () => (await lockValues(admin, resource)).every((v) => v === null), 3000);
    const next = await within(other.acquire(resource, { timeout: 2000 }), 3000, 'the next acquire');
    await next.release();
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
