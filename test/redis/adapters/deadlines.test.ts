// One timer for many requests: pure timing logic, no Redis.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Deadlines } from '../../../src/redis/adapters/deadlines.js';

/** Resolves with the order in which the expire callbacks ran, once `count` have run (or after `ms`). */
function expiries(ms: number): { fired: string[]; when: (count: number) => Promise<string[]>; expire: (name: string) => () => void } {
  const fired: string[] = [];
  let wake: (() => void) | undefined;
  return {
    fired,
    expire: (name) => () => {
      fired.push(name);
      wake?.();
    },
    when: (count) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(fired), ms);
        wake = () => {
          if (fired.length < count) return;
          clearTimeout(timer);
          resolve(fired);
        };
        wake();
      }),
  };
}

describe('Deadlines', () => {
  test('expires due requests in deadline order, and never one that was done in time', async () => {
    const deadlines = new Deadlines();
    const e = expiries(2_000);
    const now = performance.now();
    deadlines.add(now + 60, e.expire('c'));
    deadlines.add(now + 20, e.expire('a')); // earlier than the armed timer: re-arms for it
    const answered = deadlines.add(now + 40, e.expire('b'));
    assert.equal(deadlines.done(answered), true, 'done before its deadline');
    assert.deepEqual(await e.when(2), ['a', 'c']);
    assert.ok(performance.now() - now >= 59, 'the last one expired no earlier than its deadline');
    assert.equal(deadlines.done(answered), false, 'done twice: already gone');
  });

  test('an expired request can no longer be marked done', async () => {
    const deadlines = new Deadlines();
    const e = expiries(2_000);
    const entry = deadlines.add(performance.now() + 5, e.expire('x'));
    assert.deepEqual(await e.when(1), ['x']);
    assert.equal(deadlines.done(entry), false);
  });

  test('requests added after the timer fired are still expired', async () => {
    const deadlines = new Deadlines();
    const e = expiries(2_000);
    deadlines.add(performance.now() + 5, e.expire('first'));
    await e.when(1);
    deadlines.add(performance.now() + 5, e.expire('second'));
    assert.deepEqual(await e.when(2), ['first', 'second']);
  });

  test('an entry tracked again while pending is in the list once, with its new deadline', async () => {
    const deadlines = new Deadlines();
    const e = expiries(2_000);
    const now = performance.now();
    const entry = { at: now + 1_000, expire: e.expire('moved'), deadlinePrev: undefined, deadlineNext: undefined, deadlinePending: false };
    deadlines.track(entry);
    deadlines.add(now + 40, e.expire('other'));
    entry.at = now + 10;
    deadlines.track(entry); // moved earlier: the timer re-arms for it, and it is not listed twice
    assert.deepEqual(await e.when(2), ['moved', 'other']);
    assert.ok(performance.now() - now < 900, 'expired at its new deadline, not its first one');
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.deepEqual(e.fired, ['moved', 'other'], 'each expired once');
    assert.equal(deadlines.done(entry), false);
  });
});
