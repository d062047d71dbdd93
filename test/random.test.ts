// The random pool behind owner tokens: every byte handed out once, across pool refills, and tokens of the
// contract's strength (at least 128 random bits from crypto).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomHex, randomSlice } from '../src/random.js';
import { Redlock } from '../src/redis/redlock.js';
import { DEFAULTS } from '../src/options.js';

test('slices never overlap, also across refills of the 4 KiB pool', () => {
  const seen = new Set<string>();
  // 18-byte slices: 2,000 of them span about nine refills.
  for (let i = 0; i < 2_000; i++) {
    const slice = randomSlice(18);
    assert.equal(slice.length, 18);
    const text = slice.toString('hex');
    assert.ok(!seen.has(text), `slice ${i} repeats an earlier one`);
    seen.add(text);
  }
  assert.match(randomHex(8), /^[0-9a-f]{16}$/);
});

const NO_EVENTS = { nodeError: () => undefined, nodeQuarantined: () => undefined, nodeRepaired: () => undefined };

test('owner tokens: 144 random bits, unique; waiter tokens start with their manager id and a dot', () => {
  const tokens = new Set(Array.from({ length: 1_000 }, () => Redlock.newToken()));
  assert.equal(tokens.size, 1_000, 'no repeated token');
  for (const t of tokens) assert.match(t, /^[A-Za-z0-9_-]{24}$/, '18 bytes in base64url');
  // A manager's waiter tokens carry its 8-character id first: a release addresses the waiter's process by it.
  const redlock = new Redlock([], DEFAULTS, NO_EVENTS);
  const waiter = redlock.waiterToken();
  assert.match(redlock.managerId, /^[A-Za-z0-9_-]{8}$/);
  assert.equal(waiter.slice(0, 8), redlock.managerId);
  // Then a '.' (a release sends such a waiter its grant alone, _handover.lua), then the random part.
  assert.match(waiter.slice(8), /^\.[A-Za-z0-9_-]{24}$/);
  assert.equal(redlock.managerChannel('c'), `c:${redlock.managerId}`);
  assert.notEqual(new Redlock([], DEFAULTS, NO_EVENTS).managerId, redlock.managerId, 'each manager its own id');
});
