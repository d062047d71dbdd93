// The queues a manager knows to exist (which create an acquire sends), without a server: known from their
// last use for a sweep period, forgotten when found missing, and never more than the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KnownQueues } from '../../src/zookeeper/known-queues.js';

test('a queue is known from its last use for maxAge, and not after', () => {
  let now = 0;
  const known = new KnownQueues(1_000, 10, () => now);
  assert.equal(known.has('/r/a'), false, 'never seen');
  known.saw('/r/a');
  now = 1_000;
  assert.equal(known.has('/r/a'), true, 'used 1 s ago');
  known.saw('/r/a'); // used again: known from now
  now = 2_000;
  assert.equal(known.has('/r/a'), true);
  now = 2_001;
  assert.equal(known.has('/r/a'), false, 'idle longer than a sweep period: a sweep may have deleted it');
  assert.equal(known.size, 0, 'and forgotten');
});

test('a queue found missing is forgotten', () => {
  const known = new KnownQueues(60_000);
  known.saw('/r/a');
  known.forget('/r/a');
  assert.equal(known.has('/r/a'), false);
});

test('bounded: past the limit, the least recently used queue is forgotten first', () => {
  const known = new KnownQueues(60_000, 3);
  for (const q of ['/r/a', '/r/b', '/r/c']) known.saw(q);
  known.saw('/r/a'); // used again: now the most recent
  known.saw('/r/d');
  assert.equal(known.size, 3);
  assert.deepEqual(
    ['/r/a', '/r/b', '/r/c', '/r/d'].map((q) => known.has(q)),
    [true, false, true, true],
  );
  for (let i = 0; i < 1_000; i++) known.saw(`/r/many-${i}`);
  assert.equal(known.size, 3);
});
