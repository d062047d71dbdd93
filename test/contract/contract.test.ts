// The API contract (../shared/api-contract.md), once, for every backend: what a user may rely on whichever
// store is behind the manager. Backend-specific behaviour (Redis node faults, quarantine, etcd faults) is
// tested in the backends' own suites.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, LockLostError, LockTimeoutError, ManagerClosedError, type Lock } from '../../src/index.js';
import { abortedWithin } from '../support/harness.js';
import { BACKENDS, type RunningBackend } from './backends.js';

let counter = 0;
const unique = (label: string): string => `${label}-${++counter}-${randomBytes(3).toString('hex')}`;

for (const backend of BACKENDS) {
  describe(`contract: ${backend.name}`, { skip: backend.skip }, () => {
    let running: RunningBackend | undefined;
    before(async () => {
      running = await backend.start();
    });
    after(() => running?.close());
    const manager = (options?: Parameters<RunningBackend['manager']>[0]) => {
      assert.ok(running, 'backend not started');
      return running.manager({ ttl: 3_000, acquireTimeout: 5_000, ...options });
    };

    test('acquire, release: successive holders get strictly increasing fences', async () => {
      const [a, b] = [await manager(), await manager()];
      const resource = unique('seq');
      const fences: bigint[] = [];
      for (let i = 0; i < 6; i++) {
        const asked = performance.now();
        const lock = await (i % 2 ? b : a).acquire(resource);
        const took = performance.now() - asked;
        // The lease is dated from the request: the ttl less the call's own time (and Redis's drift allowance).
        assert.ok(
          lock.isValid() && lock.remaining() <= 3_000 && lock.remaining() >= 3_000 - took - 100,
          `remaining ${lock.remaining()} after an acquire of ${took.toFixed(1)} ms`,
        );
        fences.push(lock.fence);
        const result = await lock.release();
        assert.ok(result.released >= 1 && result.nodes >= result.released, `release ${JSON.stringify(result)}`);
      }
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(', ')}`);
    });

    test('tryAcquire: null while another owner holds it, a lock once released; release is idempotent', async () => {
      const [a, b] = [await manager(), await manager()];
      const resource = unique('try');
      const held = await a.acquire(resource);
      assert.equal(await b.tryAcquire(resource), null);
      const first = await held.release();
      assert.ok(first.released >= 1, `released ${JSON.stringify(first)}`);
      assert.equal(held.isValid(), false);
      const again = await held.release();
      assert.deepEqual(again, first, 'a second release returns the first one’s result');
      const next = await b.tryAcquire(resource);
      assert.ok(next, 'free after release');
      assert.ok(next.fence > held.fence);
      await next.release();
    });

    test('mutual exclusion: 24 withLock calls from 3 managers never overlap', async () => {
      const managers = [await manager(), await manager(), await manager()];
      const resource = unique('mutex');
      let inside = 0;
      let maxInside = 0;
      const fences: bigint[] = [];
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          (managers[i % 3] as (typeof managers)[number]).withLock(
            resource,
            async (lock) => {
              inside++;
              maxInside = Math.max(maxInside, inside);
              fences.push(lock.fence);
              await new Promise((r) => setImmediate(r));
              inside--;
            },
            { timeout: 20_000 },
          ),
        ),
      );
      assert.equal(maxInside, 1);
      assert.equal(fences.length, 24);
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences out of order: ${fences.join(', ')}`);
    });

    test('waiting: woken by the release (well before the ttl), in arrival order', async () => {
      const [a, b, c] = [await manager(), await manager(), await manager()];
      const resource = unique('fifo');
      const held = await a.acquire(resource, { ttl: 10_000 });
      const order: string[] = [];
      const first = b.acquire(resource, { timeout: 8_000 }).then((l) => (order.push('b'), l));
      // b is in line before c asks (inspect shows one waiter where the store can tell).
      await new Promise((r) => setTimeout(r, 200));
      const second = c.acquire(resource, { timeout: 8_000 }).then((l) => (order.push('c'), l));
      await new Promise((r) => setTimeout(r, 200));
      const releasedAt = performance.now();
      await held.release();
      const lb = await first;
      const handoff = performance.now() - releasedAt;
      assert.ok(handoff < 1_500, `handed over ${handoff.toFixed(0)} ms after the release`);
      await lb.release();
      const lc = await second;
      await lc.release();
      assert.deepEqual(order, ['b', 'c']);
      assert.ok(lc.fence > lb.fence && lb.fence > held.fence);
    });

    test('timeout and signal end a wait; the waiter leaves the line', async () => {
      const [a, b, c] = [await manager(), await manager(), await manager()];
      const resource = unique('timeout');
      const held = await a.acquire(resource);
      const started = performance.now();
      await assert.rejects(b.acquire(resource, { timeout: 300 }), (e) => e instanceof LockTimeoutError);
      assert.ok(performance.now() - started < 2_000, 'the timeout ended the wait');
      const controller = new AbortController();
      const waiting = b.acquire(resource, { timeout: 5_000, signal: controller.signal });
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);
      await assert.rejects(waiting, /caller gave up/);
      // Nobody who gave up is still in line: c is served right after the release.
      const next = c.acquire(resource, { timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 100));
      await held.release();
      const lock = await next;
      await lock.release();
    });

    test('withLock keeps the lease extended past its ttl and releases after', async () => {
      const [a, b] = [await manager({ ttl: 2_000 }), await manager()];
      const resource = unique('extend');
      const result = await a.withLock(resource, async (lock) => {
        const until = performance.now() + 3_000;
        while (performance.now() < until) {
          assert.ok(lock.isValid(), 'valid all along');
          await new Promise((r) => setTimeout(r, 250));
        }
        return lock.fence;
      });
      assert.equal(typeof result, 'bigint');
      const after = await b.tryAcquire(resource);
      assert.ok(after, 'released after withLock');
      await after.release();
    });

    test('extend renews the lease; forceRelease takes it away and the holder loses it (signal aborts)', async () => {
      const [a, b] = [await manager(), await manager()];
      const resource = unique('force');
      const lock = await a.acquire(resource);
      await new Promise((r) => setTimeout(r, 300));
      const before = lock.remaining();
      await lock.extend();
      assert.ok(lock.remaining() > before, `extended: ${before} -> ${lock.remaining()}`);
      const info = await b.inspect(resource);
      assert.equal(info.holder, lock.value);
      assert.ok(info.fence >= lock.fence, `inspect fence ${info.fence} < lock fence ${lock.fence}`);
      assert.ok(info.nodes.every((n) => n.error === null));
      assert.ok((await b.forceRelease(resource)) >= 1);
      assert.equal((await b.inspect(resource)).holder, null);
      await assert.rejects(lock.extend(), (e) => e instanceof LockLostError);
      assert.ok((await abortedWithin(lock.signal, 1_000)) instanceof LockLostError);
      const next = await b.tryAcquire(resource);
      assert.ok(next && next.fence > lock.fence);
      await next.release();
      assert.equal(await b.forceRelease(resource), 0, 'nothing to force-release');
    });

    test('withLock rejects with LockLostError when the lock is lost while fn runs, and with fn’s own error first', async () => {
      const [a, b] = [await manager({ ttl: 2_000 }), await manager()];
      const resource = unique('lost');
      const lost = a.withLock(resource, async (lock) => {
        await b.forceRelease(resource);
        await abortedWithin(lock.signal, 5_000);
        return 'done';
      });
      await assert.rejects(lost, (e) => e instanceof LockLostError);
      await assert.rejects(
        a.withLock(unique('throws'), () => {
          throw new Error('from fn');
        }),
        /from fn/,
      );
    });

    test('a multi-resource lock is all or nothing, and its fence exceeds each resource’s earlier fences', async () => {
      const [a, b] = [await manager(), await manager()];
      const [x, y] = [unique('x'), unique('y')];
      const onX = await a.acquire(x);
      const xFence = onX.fence;
      assert.equal(await b.tryAcquire([x, y]), null, 'x is held: nothing is taken');
      assert.ok(await b.tryAcquire(y).then((l) => l?.release()), 'y was not left taken');
      await onX.release();
      const both = await b.acquire([y, x]);
      assert.deepEqual([...both.resources], [x, y].sort());
      assert.ok(both.fence > xFence);
      assert.equal(await a.tryAcquire(y), null);
      await both.release();
      const later = await a.acquire(y);
      assert.ok(later.fence > both.fence);
      await later.release();
    });

    test('semaphore: at most limit permits at once', async () => {
      const [a, b] = [await manager(), await manager()];
      const name = unique('sem');
      const sa = a.semaphore(name, { limit: 2 });
      const sb = b.semaphore(name, { limit: 2 });
      const p1 = await sa.acquire();
      const p2 = await sb.acquire();
      assert.equal(await sb.tryAcquire(), null);
      const third = sb.acquire({ timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 100));
      await p1.release();
      const p3 = await third;
      assert.ok(p3.fence > p1.fence);
      await Promise.all([p2.release(), p3.release()]);
    });

    test('read-write lock: readers share, a writer is alone, a waiting writer keeps new readers out', async () => {
      const [a, b] = [await manager(), await manager()];
      const name = unique('rw');
      const ra = a.readWriteLock(name);
      const rb = b.readWriteLock(name);
      const r1 = await ra.read();
      const r2 = await rb.read();
      assert.equal(await rb.tryWrite(), null);
      const writer = rb.write({ timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await ra.tryRead(), null, 'a waiting writer keeps new readers out');
      await Promise.all([r1.release(), r2.release()]);
      const w = await writer;
      assert.equal(await ra.tryRead(), null);
      await w.release();
      const r3 = await ra.tryRead();
      assert.ok(r3);
      await r3.release();
    });

    test('close releases held locks; calls after close reject; bad input rejects before any call', async () => {
      const [a, b] = [await manager(), await manager()];
      const resource = unique('close');
      const lock: Lock = await a.acquire(resource);
      await a.close();
      assert.equal(lock.isValid(), false);
      await assert.rejects(a.acquire(resource), (e) => e instanceof ManagerClosedError);
      const next = await b.tryAcquire(resource);
      assert.ok(next, 'released by close');
      await next.release();
      await assert.rejects(b.acquire(''), (e) => e instanceof InvalidArgumentError);
      await assert.rejects(b.acquire([resource, resource]), (e) => e instanceof InvalidArgumentError);
      await assert.rejects(b.acquire(resource, { ttl: -1 }), (e) => e instanceof InvalidArgumentError);
    });
  });
}
