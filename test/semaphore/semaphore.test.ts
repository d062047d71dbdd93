// Semaphore: the limit under contention, leases, loss, limits changing, bad input, node failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, LockReleasedError, LockTimeoutError, ManagerClosedError, type Lock, type LockManager } from '../../src/index.js';
import { CLIENT_KINDS, delay } from '../support/harness.js';
import { NODE_COUNTS, readyManager, settle, uniqueResource, within, withNodeSets } from '../lock-manager/helpers.js';
import { toJsonLine } from '../../src/cli/output.js';
import { abortReason, expectInvalidWithoutTraffic, expectWrongType, keyOf, Occupancy, OPTIONS, withNodesDown } from './helpers.js';

const CALLERS = 12;
const LIMIT = 3;
const ROUNDS = 4;

withNodeSets('semaphore', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: ${CALLERS} callers x ${ROUNDS} rounds never hold more than ${LIMIT} permits`, async (t) => {
      const managers: LockManager[] = [];
      for (let i = 0; i < 3; i++) managers.push(await readyManager(env(), kind, OPTIONS));
      const name = uniqueResource(`sem-${kind}`);
      const inside = new Occupancy();
      // When each caller asked and when it got its permit: fences of permits asked for after another was
      // granted must be larger (permits asked for side by side may tie on N nodes: each takes the largest
      // counter of its own quorum).
      const holds: Array<{ asked: number; got: number; fence: bigint }> = [];
      const section = async (permit: Lock, asked: number): Promise<void> => {
        inside.enter();
        try {
          assert.ok(inside.now <= LIMIT, `${inside.now} holders inside at once, limit ${LIMIT}`);
          assert.ok(permit.isValid(), 'permit valid inside the section');
          holds.push({ asked, got: performance.now(), fence: permit.fence });
          await delay(5 + Math.random() * 10);
          assert.ok(inside.now <= LIMIT, `${inside.now} holders inside at once, limit ${LIMIT}`);
        } finally {
          inside.leave();
        }
      };
      const caller = async (id: number): Promise<void> => {
        const sem = managers[id % managers.length]!.semaphore(name, { limit: LIMIT });
        for (let round = 0; round < ROUNDS; round++) {
          const asked = performance.now();
          if (id % 2 === 0) {
            await sem.withPermit((permit) => section(permit, asked));
          } else {
            const permit = await sem.acquire();
            try {
              await section(permit, asked);
            } finally {
              await permit.release();
            }
          }
        }
      };
      const began = performance.now();
      await Promise.all(Array.from({ length: CALLERS }, (_, id) => caller(id)));
      t.diagnostic(
        `${CALLERS * ROUNDS} permits on ${nodeCount} node(s) in ${Math.round(performance.now() - began)} ms, max ${inside.max} inside`,
      );
      assert.equal(holds.length, CALLERS * ROUNDS);
      assert.ok(inside.max <= LIMIT, `at most ${LIMIT} holders, saw ${inside.max}`);
      assert.ok(inside.max >= 2, `permits were held side by side (max ${inside.max})`);
      for (const a of holds) {
        for (const b of holds) {
          if (a.got < b.asked) assert.ok(b.fence > a.fence, `fence ${b.fence} asked for after ${a.fence} was granted is not larger`);
        }
      }
      // One node: one atomic counter, so every permit has its own fence.
      if (nodeCount === 1) assert.equal(new Set(holds.map((h) => h.fence)).size, holds.length, 'every permit has its own fence');
      const left = await Promise.all(env().admin.map((a) => a.zcard(keyOf(name, 'permits'))));
      assert.deepEqual(
        left,
        env().admin.map(() => 0),
        'no permit left behind',
      );
    });
  }

  test('tryAcquire: null at the limit; fences strictly increase; release frees a permit and wakes a waiter', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const sem = locks.semaphore(uniqueResource('sem-try'), { limit: 2 });
    const a = await sem.tryAcquire();
    const b = await sem.tryAcquire();
    assert.ok(a && b, 'two permits of two');
    assert.ok(b.fence > a.fence, `fence ${b.fence} after ${a.fence}`);
    assert.notEqual(a.value, b.value);
    assert.equal(await sem.tryAcquire(), null);
    const waiting = settle(sem.acquire({ timeout: 10_000 }));
    await delay(50); // let the waiter make its first round and subscribe
    const started = performance.now();
    await a.release();
    const c = await within(waiting, 5_000, 'waiter');
    assert.ok(c.ok, 'the waiter got the freed permit');
    assert.ok(c.at - started < 1_000, `woken by the release, not its timer (${Math.round(c.at - started)} ms)`);
    assert.ok(c.value.fence > b.fence, `fence ${c.value.fence} after ${b.fence}`);
    assert.ok(a.signal.reason instanceof LockReleasedError, 'a released permit aborts its signal with LockReleasedError');
    await b.release();
    await c.value.release();
  });

  test('a crashed holder: its permit comes back when its lease ends', async () => {
    const locks = await readyManager(env(), 'node-redis', OPTIONS);
    const other = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('sem-expiry');
    const crashed = await locks.semaphore(name, { limit: 1 }).tryAcquire({ ttl: 600 });
    assert.ok(crashed, 'first permit taken');
    // The holder "crashes": never releases, never extends.
    const sem = other.semaphore(name, { limit: 1 });
    assert.equal(await sem.tryAcquire(), null);
    const started = performance.now();
    const permit = await sem.acquire({ timeout: 5_000 });
    const waited = performance.now() - started;
    assert.ok(waited < 2_500, `got the permit ${Math.round(waited)} ms after its lease ended, not much later`);
    assert.ok(permit.fence > crashed.fence, 'a later permit has a larger fence');
    await permit.release();
  });

  test('a smaller limit evicts nobody and admits only while holders < limit; a larger one admits more', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('sem-limit');
    const wide = locks.semaphore(name, { limit: 3 });
    const held = [await wide.acquire(), await wide.acquire()];
    const narrow = locks.semaphore(name, { limit: 1 });
    assert.equal(await narrow.tryAcquire(), null);
    for (const p of held) await p.extend(); // still held: extension succeeds
    const third = await wide.tryAcquire();
    assert.ok(third, 'the wider limit still admits a third');
    assert.equal(await wide.tryAcquire(), null);
    await held[0]!.release();
    await held[1]!.release();
    assert.equal(await narrow.tryAcquire(), null);
    await third.release();
    const only = await narrow.tryAcquire();
    assert.ok(only, 'admitted once nobody holds');
    await only.release();
  });

  test('loss: the permit deleted behind its back fails the extension, aborts the signal; withPermit rejects', async () => {
    const { admin } = env();
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('sem-loss');
    const sem = locks.semaphore(name, { limit: 2 });
    const permit = await sem.acquire();
    await Promise.all(admin.map((a) => a.del(keyOf(name, 'permits'))));
    await assert.rejects(permit.extend(), LockLostError);
    assert.ok(permit.signal.aborted && permit.signal.reason instanceof LockLostError, 'signal aborted with LockLostError');
    assert.equal(permit.isValid(), false);
    await permit.release();

    const lost = sem.withPermit(async (p) => {
      await Promise.all(admin.map((a) => a.del(keyOf(name, 'permits'))));
      const reason = await abortReason(p, 5_000); // the next auto-extension (ttl / 3) finds it gone
      assert.ok(reason instanceof LockLostError, 'signal aborts with LockLostError');
      return 'done';
    });
    await assert.rejects(within(lost, 8_000, 'withPermit'), LockLostError);
  });

  test('withPermit keeps the permit extended past its ttl and releases it afterwards', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const sem = locks.semaphore(uniqueResource('sem-extend'), { limit: 1 });
    const extended: number[] = [];
    locks.on('extended', (e) => extended.push(e.remaining));
    const result = await sem.withPermit(
      async (p) => {
        await delay(1_200); // twice the ttl
        assert.ok(p.isValid(), 'still valid after twice its ttl');
        return p.fence;
      },
      { ttl: 600 },
    );
    assert.equal(typeof result, 'bigint');
    assert.ok(extended.length >= 2, `extended ${extended.length} times`);
    const again = await sem.tryAcquire();
    assert.ok(again, 'released after withPermit');
    await again.release();
  });

  test('timeout, abort signal, await using, a closed manager', async () => {
    const locks = await readyManager(env(), 'node-redis', OPTIONS);
    const name = uniqueResource('sem-misc');
    const sem = locks.semaphore(name, { limit: 1 });
    let permitToken: string | undefined;
    // What the manager reported while the test ran, for the failure message below.
    const reported: string[] = [];
    const since = performance.now();
    const note = (what: string) => (e: object) =>
      reported.push(`${(performance.now() - since).toFixed(1)} ms ${what} ${toJsonLine(e).slice(0, 300)}`);
    for (const event of ['nodeError', 'nodeQuarantined', 'released', 'retry'] as const) locks.on(event, note(event));
    {
      await using permit = await sem.acquire();
      permitToken = permit.value;
      assert.ok(permit.isValid(), 'held in the block');
      const t0 = performance.now();
      await assert.rejects(sem.acquire({ timeout: 300 }), LockTimeoutError);
      assert.ok(performance.now() - t0 < 1_500, 'timed out near its timeout');
      const controller = new AbortController();
      const pending = settle(sem.acquire({ signal: controller.signal }));
      const reason = new Error('stop');
      setTimeout(() => controller.abort(reason), 100);
      const outcome = await within(pending, 2_000, 'aborted acquire');
      assert.ok(!outcome.ok && outcome.error === reason, 'rejects with the signal reason');
    }
    const tried = performance.now();
    const after = await sem.tryAcquire();
    if (!after) {
      // Seen twice under a loaded run (a CI run, and npm test in a fresh clone on 2026-11-28, where every node's
      // permits were already empty when read) and not reproduced in 49 runs since: say what held the permit,
      // node by node, and what the manager reported meanwhile.
      const took = (performance.now() - tried).toFixed(1);
      const held = await Promise.all(env().admin.map((a) => a.zrange(keyOf(name, 'permits'), '0', '-1', 'WITHSCORES')));
      assert.fail(
        `\`await using\` released the permit; tryAcquire took ${took} ms and found it held; permits per node afterwards: ` +
          `${JSON.stringify(held)}, permit ${String(permitToken)}; reported: ${reported.join(' | ') || 'nothing'}`,
      );
    }
    await locks.close();
    assert.ok(after.signal.aborted, 'close() released the held permit');
    await assert.rejects(sem.acquire(), ManagerClosedError);
  });

  test('a key of another type fails with WRONGTYPE and is left alone', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('sem-type');
    await expectWrongType(env().admin, keyOf(name, 'permits'), () => locks.semaphore(name, { limit: 2 }).tryAcquire());
  });

  test('bad input throws InvalidArgumentError before any network call', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const sem = locks.semaphore(uniqueResource('sem-bad'), { limit: 1 });
    await expectInvalidWithoutTraffic(env().admin, [
      ['empty name', () => locks.semaphore('', { limit: 1 })],
      ['name not a string', () => locks.semaphore(42 as unknown as string, { limit: 1 })],
      ['no options', () => locks.semaphore('x', undefined as unknown as { limit: number })],
      ['limit 0', () => locks.semaphore('x', { limit: 0 })],
      ['limit 1.5', () => locks.semaphore('x', { limit: 1.5 })],
      ['limit "3"', () => locks.semaphore('x', { limit: '3' as unknown as number })],
      ['limit NaN', () => locks.semaphore('x', { limit: NaN })],
      ['limit 2^31', () => locks.semaphore('x', { limit: 2 ** 31 })],
      ['ttl 0', () => sem.acquire({ ttl: 0 })],
      ['negative timeout', () => sem.acquire({ timeout: -1 })],
      ['signal not a signal', () => sem.tryAcquire({ signal: 'x' as unknown as AbortSignal })],
      ['withPermit without a function', () => sem.withPermit(undefined as unknown as () => void)],
    ]);
  });

  if (nodeCount === 5) {
    test('2 of 5 nodes down: permits still work on the other 3', async () => {
      const locks = await readyManager(env(), 'ioredis', OPTIONS);
      const sem = locks.semaphore(uniqueResource('sem-minority'), { limit: 2 });
      await withNodesDown(env().nodes, [0, 3], async () => {
        const a = await sem.acquire({ timeout: 5_000 });
        const b = await sem.acquire({ timeout: 5_000 });
        assert.ok(b.fence > a.fence, 'fences still increase');
        assert.equal(await sem.tryAcquire(), null);
        await a.extend();
        await a.release();
        const c = await sem.acquire({ timeout: 5_000 });
        assert.ok(c.fence > b.fence, 'fences still increase');
        await b.release();
        await c.release();
      });
    });
  }
});
