// Admission of a manager's mutex acquires (src/redis/admission.ts): at most `limit` first attempts under way,
// the rest parked in arrival order as a small record that keeps its timeout and signal. The pure gate first
// (a scripted node-level acquire stands in for wait.ts), then a real node: heap per acquire in flight.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redis } from 'ioredis';
import type { WaitResult } from '../../src/backend.js';
import { LockManager, LockTimeoutError, ManagerClosedError } from '../../src/index.js';
import { monotonicNow } from '../../src/clock.js';
import { resolveAcquireOptions, resolveManagerOptions, resolveTryAcquireOptions } from '../../src/options.js';
import { Admission } from '../../src/redis/admission.js';
import type { NodeAcquire } from '../../src/redis/local-queue.js';
import { ticketAt, ticketOf, type Arrival } from '../../src/redis/wait.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { settle, within } from '../lock-manager/helpers.js';

const manager = resolveManagerOptions(undefined);
const opts = (timeout: number): ReturnType<typeof resolveAcquireOptions> => resolveAcquireOptions({ timeout }, manager);

/** A started node-level acquire: its arguments, and the hands that end its first attempt and the call. */
interface Started {
  readonly resource: string;
  readonly arrival: Arrival;
  finish(): void;
}

/** An Admission over a scripted node-level acquire: `started` lists the calls that reached it, in order. */
function gate(limit: number, degraded = (): boolean => false): { admission: Admission; started: Started[] } {
  const started: Started[] = [];
  const nodeAcquire: NodeAcquire = (resources, _o, _signal, _onRetry, arrival) =>
    new Promise<WaitResult>((resolve) => {
      const a = arrival as Arrival;
      started.push({
        resource: resources[0] as string,
        arrival: a,
        // As wait.ts does: the call ends by saying its first attempt is done (again, if it said so before).
        finish: () => {
          a.firstAttemptDone?.();
          resolve({ grant: {} as WaitResult['grant'], attempts: 1, waited: 0 });
        },
      });
    });
  return { admission: new Admission(limit, nodeAcquire, degraded), started };
}

const names = (started: readonly Started[]): string[] => started.map((s) => s.resource);
const noRetry = (): void => undefined;

describe('Admission', () => {
  test('at most `limit` first attempts under way; the others start in arrival order as slots free', async () => {
    const { admission, started } = gate(2);
    const calls = ['a', 'b', 'c', 'd', 'e'].map((r) => admission.acquire([r], opts(10_000), undefined, noRetry));
    assert.deepEqual(names(started), ['a', 'b']);
    assert.equal(admission.parked, 3);
    started[0]!.finish();
    await calls[0];
    assert.deepEqual(names(started), ['a', 'b', 'c'], 'a settled call frees its slot for the first parked one');
    started[1]!.finish();
    started[2]!.finish();
    await Promise.all(calls.slice(1, 3));
    assert.deepEqual(names(started), ['a', 'b', 'c', 'd', 'e']);
    for (const s of started.slice(3)) s.finish();
    await Promise.all(calls);
    assert.equal(admission.starting, 0);
  });

  test('a slot is held for the first attempt only: a caller waiting for a held lock lets the next one start', () => {
    const { admission, started } = gate(1);
    void admission.acquire(['held'], opts(10_000), undefined, noRetry);
    void admission.acquire(['mine'], opts(10_000), undefined, noRetry);
    assert.deepEqual(names(started), ['held']);
    started[0]!.arrival.firstAttemptDone?.(); // its first attempt found the lock held: it waits, without its slot
    assert.deepEqual(names(started), ['held', 'mine']);
    started[0]!.arrival.firstAttemptDone?.(); // called again (or the call settling later) frees nothing twice
    assert.equal(admission.starting, 1);
  });

  test('a parked caller keeps its arrival: its place in the nodes’ queue and its timeout count from then', () => {
    const { admission, started } = gate(1);
    void admission.acquire(['first'], opts(10_000), undefined, noRetry);
    // Its arrival lies between these two readings of the clock (no slack to tune: a stall of this process
    // between two statements, common on a loaded machine, made a 1 ms allowance fail).
    const before = monotonicNow();
    void admission.acquire(['parked'], opts(10_000), undefined, noRetry);
    const arrived = monotonicNow();
    void admission.acquire(['single attempt'], resolveTryAcquireOptions(undefined, manager), undefined, noRetry);
    for (let spins = 0; spins < 1_000_000 && monotonicNow() === arrived; spins++); // its turn comes at a later reading
    started[0]!.arrival.firstAttemptDone?.();
    started[1]!.arrival.firstAttemptDone?.();
    const [, parked, single] = started;
    const at = parked!.arrival.started;
    assert.ok(at >= before && at <= arrived, 'started: when it arrived, not when its turn came');
    // Its place in the nodes' queue is read off that arrival (wait.ts decides who queues: a single attempt never does).
    assert.match(ticketOf(parked!.arrival), /^\d+\.\d{3}$/, 'a fair waiter has its arrival ticket');
    assert.equal(ticketOf(parked!.arrival), ticketAt(at), 'the ticket is its arrival, not its turn');
    assert.ok(single!.arrival.started >= arrived, 'each parked caller keeps its own arrival');
  });

  test('a parked caller that times out leaves at its own time, with LockTimeoutError, and never starts', async () => {
    const { admission, started } = gate(1);
    const slow = admission.acquire(['slow'], opts(10_000), undefined, noRetry);
    const quitter = settle(admission.acquire(['quitter'], opts(100), undefined, noRetry));
    const behind = admission.acquire(['behind'], opts(10_000), undefined, noRetry);
    const t0 = performance.now();
    const gaveUp = await within(quitter, 5_000, 'the parked caller with 100 ms');
    assert.ok(!gaveUp.ok && gaveUp.error instanceof LockTimeoutError, 'LockTimeoutError');
    assert.ok(performance.now() - t0 >= 90, 'not before its timeout');
    started[0]!.finish();
    await slow; // its slot went to the next parked caller as it settled
    assert.deepEqual(names(started), ['slow', 'behind'], 'the one that gave up is skipped, the one behind it starts');
    started[1]!.finish();
    await behind;
  });

  test('a parked caller whose signal aborts leaves at once with the signal’s reason', async () => {
    const { admission, started } = gate(1);
    void admission.acquire(['slow'], opts(10_000), undefined, noRetry);
    const controller = new AbortController();
    const parked = settle(admission.acquire(['aborted'], opts(10_000), controller.signal, noRetry));
    const reason = new Error('caller gave up');
    controller.abort(reason);
    const result = await within(parked, 1_000, 'the aborted caller');
    assert.ok(!result.ok && result.error === reason);
    assert.deepEqual(names(started), ['slow']);
    const already = settle(admission.acquire(['late'], opts(10_000), controller.signal, noRetry));
    const late = await within(already, 1_000, 'a caller with an aborted signal');
    assert.ok(!late.ok && late.error === reason, 'an already aborted signal rejects before parking');
  });

  test('while a node is unresponsive nobody is parked (rounds then wait for the node, not for memory)', () => {
    let degraded = false;
    const { admission, started } = gate(1, () => degraded);
    void admission.acquire(['a'], opts(10_000), undefined, noRetry);
    void admission.acquire(['b'], opts(10_000), undefined, noRetry);
    assert.deepEqual(names(started), ['a']);
    degraded = true;
    void admission.acquire(['c'], opts(10_000), undefined, noRetry);
    assert.deepEqual(names(started), ['a', 'c'], 'a new caller starts at once');
    started[0]!.arrival.firstAttemptDone?.();
    assert.deepEqual(names(started), ['a', 'c', 'b'], 'the parked ones start at the next chance');
  });
});

describe('heap per acquire in flight (a real node)', () => {
  test('16,384 acquires of distinct keys fired at once: under 4 KiB of heap each while in flight; close() ends the parked ones at once', async (t) => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const nodes = await startRedisNodes(1);
    const client = new Redis(nodes.urls[0] as string);
    const locks = new LockManager([client], { acquireTimeout: 60_000 });
    try {
      await (await locks.acquire('heap-warm')).release();
      const count = 16_384;
      gc();
      const before = process.memoryUsage().heapUsed;
      const calls = Array.from({ length: count }, (_, i) => settle(locks.acquire(`heap-${i}`)));
      // Nothing has settled yet (that takes a round trip): every call is in flight.
      gc();
      const perCall = (process.memoryUsage().heapUsed - before) / count;
      t.diagnostic(`${perCall.toFixed(0)} B of heap per acquire in flight`);
      // The parked callers end with the manager (its closing signal), without 16,384 round trips in the suite.
      await within(locks.close(), 20_000, 'close()');
      const outcomes = await within(Promise.all(calls), 5_000, 'every call settled');
      const closed = outcomes.filter((o) => !o.ok && o.error instanceof ManagerClosedError).length;
      const acquired = outcomes.filter((o) => o.ok).length;
      assert.equal(closed + acquired, count, 'each call either got its lock or ended with ManagerClosedError');
      assert.ok(closed >= count - 2 * 256, `the parked callers ended with the manager (${closed} of ${count})`);
      // About 2.8 KB here (through tsx, whose kept function names add ~250 B per named closure; 2.3 KB as built),
      // 14.5 KB without admission: the bound is the target.
      assert.ok(perCall < 4096, `${perCall.toFixed(0)} B of heap per acquire in flight`);
    } finally {
      await locks.close();
      client.disconnect();
      await nodes.stop();
    }
  });
});
