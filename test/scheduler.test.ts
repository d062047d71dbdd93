// The one-timer scheduler, with a hand-driven clock and Node's mock timers: no real waiting.
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Scheduler } from '../src/scheduler.js';

// Node 20 calls its mock timers experimental and prints so on stderr, into the suite's output, which has no warnings.
// That one notice is dropped here; every other warning of this process still goes out.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  if (String(warning).startsWith('The MockTimers API is an experimental feature')) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

/** A fake monotonic clock that moves mock timers along with it. */
class Clock {
  now = 1_000;
  readonly read = (): number => this.now;
  /** 1 ms at a time, so a callback sees the time its timer really fired at. */
  advance(ms: number): void {
    for (let i = 0; i < ms; i++) {
      this.now += 1;
      mock.timers.tick(1);
    }
  }
}

/**
 * Counts timers pending at once by wrapping the (mocked) globals the
 * scheduler calls; `maxPending` is the most that were ever armed together.
 */
function trackTimers(): {
  readonly pending: () => number;
  readonly maxPending: () => number;
  readonly created: () => number;
  restore(): void;
} {
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const live = new Set<unknown>();
  let max = 0;
  let created = 0;
  const wrappedSet = ((fn: () => void, ms?: number) => {
    const handle: NodeJS.Timeout = realSet(() => {
      live.delete(handle);
      fn();
    }, ms);
    live.add(handle);
    created++;
    max = Math.max(max, live.size);
    return handle;
  }) as unknown as typeof setTimeout;
  globalThis.setTimeout = wrappedSet;
  globalThis.clearTimeout = ((handle: NodeJS.Timeout | undefined) => {
    live.delete(handle);
    realClear(handle);
  }) as typeof clearTimeout;
  return {
    pending: () => live.size,
    maxPending: () => max,
    created: () => created,
    restore() {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
    },
  };
}

describe('Scheduler', () => {
  let clock: Clock;
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout'] });
    clock = new Clock();
  });
  afterEach(() => mock.timers.reset());

  test('runs callbacks in time order, each not before its time', () => {
    const s = new Scheduler(clock.read);
    const ran: Array<[string, number]> = [];
    const at = (label: string, offset: number) => s.at(clock.now + offset, () => ran.push([label, clock.now]));
    at('c', 30);
    at('a', 10);
    at('d', 40);
    at('b', 20);
    assert.equal(s.size, 4);
    clock.advance(5);
    assert.equal(ran.length, 0);
    clock.advance(10); // now +15
    assert.deepEqual(
      ran.map(([l]) => l),
      ['a'],
    );
    clock.advance(30); // now +45
    assert.deepEqual(
      ran.map(([l]) => l),
      ['a', 'b', 'c', 'd'],
    );
    for (const [label, when] of ran) assert.ok(when >= 1_000 + { a: 10, b: 20, c: 30, d: 40 }[label]!, `${label} ran early`);
    assert.equal(s.size, 0);
  });

  test('entries due at the same time run in the order they were added', () => {
    const s = new Scheduler(clock.read);
    const ran: number[] = [];
    for (let i = 0; i < 20; i++) s.at(clock.now + 10, () => ran.push(i));
    clock.advance(10);
    assert.deepEqual(
      ran,
      Array.from({ length: 20 }, (_, i) => i),
    );
  });

  test('cancel stops an entry; cancelling twice or after it ran is harmless', () => {
    const s = new Scheduler(clock.read);
    const ran: string[] = [];
    const cancelA = s.at(clock.now + 10, () => ran.push('a'));
    const cancelB = s.at(clock.now + 20, () => ran.push('b'));
    s.at(clock.now + 30, () => ran.push('c'));
    cancelA();
    cancelA();
    assert.equal(s.size, 2);
    clock.advance(25);
    assert.deepEqual(ran, ['b']);
    cancelB(); // already ran
    assert.equal(s.size, 1);
    clock.advance(10);
    assert.deepEqual(ran, ['b', 'c']);
    assert.equal(s.size, 0);
  });

  test('cancelling the earliest entry re-arms for the next one; cancelling all leaves no timer', () => {
    const timers = trackTimers();
    try {
      const s = new Scheduler(clock.read);
      const ran: string[] = [];
      const cancelFirst = s.at(clock.now + 10, () => ran.push('first'));
      const cancelSecond = s.at(clock.now + 50, () => ran.push('second'));
      cancelFirst();
      clock.advance(20);
      assert.equal(ran.length, 0);
      clock.advance(40);
      assert.deepEqual(ran, ['second']);
      const cancelThird = s.at(clock.now + 100, () => ran.push('third'));
      assert.equal(timers.pending(), 1);
      cancelThird();
      cancelSecond();
      assert.equal(timers.pending(), 0, 'no timer may stay armed with nothing scheduled');
      clock.advance(200);
      assert.deepEqual(ran, ['second']);
    } finally {
      timers.restore();
    }
  });

  test('10 000 entries share a single armed timer, whatever order they arrive in', () => {
    const timers = trackTimers();
    try {
      const s = new Scheduler(clock.read);
      const offsets = Array.from({ length: 10_000 }, (_, i) => ((i * 7919) % 10_000) + 1); // a permutation of 1..10000
      const ran: number[] = [];
      for (const o of offsets) s.at(clock.now + o, () => ran.push(o));
      assert.equal(s.size, 10_000);
      assert.equal(timers.maxPending(), 1);
      clock.advance(5_000);
      assert.equal(ran.length, 5_000);
      clock.advance(5_000);
      assert.equal(ran.length, 10_000);
      assert.deepEqual(
        ran,
        [...offsets].sort((a, b) => a - b),
      );
      assert.equal(timers.maxPending(), 1);
      assert.equal(timers.pending(), 0);
    } finally {
      timers.restore();
    }
  });

  test('a callback may schedule more work, which runs at its own time', () => {
    const s = new Scheduler(clock.read);
    const ran: string[] = [];
    s.at(clock.now + 10, () => {
      ran.push('outer');
      s.at(clock.now + 10, () => ran.push('inner'));
    });
    clock.advance(10);
    assert.deepEqual(ran, ['outer']);
    clock.advance(10);
    assert.deepEqual(ran, ['outer', 'inner']);
  });

  test('stop() drops everything and disarms', () => {
    const timers = trackTimers();
    try {
      const s = new Scheduler(clock.read);
      let ran = 0;
      for (let i = 1; i <= 100; i++) s.at(clock.now + i, () => ran++);
      s.stop();
      assert.equal(s.size, 0);
      assert.equal(timers.pending(), 0);
      clock.advance(1_000);
      assert.equal(ran, 0);
    } finally {
      timers.restore();
    }
  });

  test("its timer is unref'd: it never keeps a process alive", () => {
    mock.timers.reset(); // real timers: check the handle itself
    const s = new Scheduler(() => performance.now());
    const realSet = globalThis.setTimeout;
    let handle: NodeJS.Timeout | undefined;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => (handle = realSet(fn, ms))) as unknown as typeof setTimeout;
    try {
      s.at(performance.now() + 60_000, () => undefined);
    } finally {
      globalThis.setTimeout = realSet;
      s.stop();
    }
    assert.ok(handle);
    assert.equal(handle.hasRef(), false);
  });

  test('property: any mix of adds, cancels and clock steps runs exactly the live entries, in order, never early', () => {
    type Op = { kind: 'add'; offset: number } | { kind: 'cancel'; index: number } | { kind: 'advance'; ms: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), offset: fc.integer({ min: 0, max: 200 }) }),
      fc.record({ kind: fc.constant('cancel' as const), index: fc.nat({ max: 50 }) }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 80 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        mock.timers.reset();
        mock.timers.enable({ apis: ['setTimeout'] });
        clock = new Clock();
        const s = new Scheduler(clock.read);
        const entries: Array<{ at: number; id: number; cancel: () => void; cancelled: boolean }> = [];
        const ran: Array<{ id: number; at: number; when: number }> = [];
        for (const o of ops) {
          if (o.kind === 'add') {
            const id = entries.length;
            const at = clock.now + o.offset;
            entries.push({ at, id, cancel: s.at(at, () => ran.push({ id, at, when: clock.now })), cancelled: false });
          } else if (o.kind === 'cancel') {
            const e = entries[o.index];
            if (e && !ran.some((r) => r.id === e.id)) {
              e.cancel();
              e.cancelled = true;
            }
          } else clock.advance(o.ms);
        }
        clock.advance(1_000);
        const expected = entries.filter((e) => !e.cancelled).map((e) => e.id);
        assert.deepEqual(
          ran.map((r) => r.id).sort((a, b) => a - b),
          expected,
        );
        for (const r of ran) assert.ok(r.when >= r.at - 1, `entry ${r.id} due at ${r.at} ran at ${r.when}`);
        // entries that became due in one step run earliest first
        for (let i = 1; i < ran.length; i++) {
          const [a, b] = [ran[i - 1]!, ran[i]!];
          if (a.when === b.when) assert.ok(a.at < b.at || (a.at === b.at && a.id < b.id), `entries ${a.id} and ${b.id} ran out of order`);
        }
        assert.equal(s.size, 0);
      }),
      { numRuns: 200 },
    );
  });
});
