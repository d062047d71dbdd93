// The handoff shortcut within one process: which local waiter a release wakes. Pure logic, no Redis.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalWaiters, Wakeup } from '../../src/redis/notifications.js';

/** A waiter sleeping in wait(): resolves with how it woke ('timer' after 2 s). */
function sleeping(token: string): { wakeup: Wakeup; woke: Promise<'notified' | 'timer'> } {
  const wakeup = new Wakeup(token);
  return { wakeup, woke: wakeup.wait(2_000, 3, undefined) };
}

describe('LocalWaiters', () => {
  test('a release wakes the local waiter with the earliest ticket, as if every node had notified it', async () => {
    const local = new LocalWaiters();
    const late = sleeping('late');
    const early = sleeping('early');
    local.add('r', late.wakeup, '1000.500');
    local.add('r', early.wakeup, '1000.250');
    local.released('r', 5);
    assert.equal(await early.woke, 'notified', 'the earliest waiter woke although it needed 3 of 5 nodes');
    assert.equal(early.wakeup.takeShortcut(), true, 'and knows it was the shortcut');
    assert.equal(early.wakeup.takeShortcut(), false, 'once');
    local.remove('r', early.wakeup);
    local.released('r', 5);
    assert.equal(await late.woke, 'notified', 'then the next one');
  });

  test('a release of another resource, or with nobody waiting here, wakes nobody', async () => {
    const local = new LocalWaiters();
    const w = new Wakeup('w');
    local.add('r', w, '1');
    local.released('other', 1);
    local.released('r', 1); // registered but not sleeping in wait(): nothing to wake, and no error
    assert.equal(w.takeShortcut(), false);
    assert.equal(await w.wait(20, 1, undefined), 'timer', 'nothing was recorded for later');
  });

  test('a guess that keeps missing is tried only on every 16th release', async () => {
    const local = new LocalWaiters();
    local.add('r', new Wakeup('seed'), '1'); // keeps the entry alive
    for (let i = 0; i < 3; i++) local.outcome('r', false); // hits: 1 -> 0.5 -> 0.25 -> 0.125
    let woken = 0;
    for (let i = 0; i < 32; i++) {
      const w = sleeping(`w${i}`);
      local.add('r', w.wakeup, '0'); // the earliest
      local.released('r', 1);
      if (w.wakeup.takeShortcut()) woken++;
      local.remove('r', w.wakeup);
      w.wakeup.wakeForHandoff(1); // end its sleep either way
      await w.woke;
    }
    assert.equal(woken, 2, 'two probes in 32 releases');
    local.outcome('r', true);
    local.outcome('r', true); // a probe that hit: back above the threshold
    const w = sleeping('after');
    local.add('r', w.wakeup, '0');
    local.released('r', 1);
    assert.equal(w.wakeup.takeShortcut(), true, 'the shortcut is back');
    await w.woke;
  });
});
