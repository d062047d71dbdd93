// The dating rule of a grant a release hands a waiter (handed-grant.ts), as pure logic: a grant counts from
// the send time of a queued attempt whose reply saw a lower counter of the same epoch, and anything that
// cannot be dated so is left to a confirming attempt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusyMarks } from '../../src/redis/handed-grant.js';
import type { AcquireReply } from '../../src/redis/replies.js';

const state = { epoch: 'e1', age: -1, trusted: true, longest: 5000 };
const held = (counter: bigint, epoch = 'e1'): Extract<AcquireReply, { kind: 'held' }> => ({
  kind: 'held',
  pttl: 100,
  ahead: false,
  counter,
  ...state,
  epoch,
});
const granted = (fence: bigint, epoch = 'e1'): AcquireReply => ({ kind: 'granted', fence, counter: fence, ...state, epoch });

test('a grant above the counter of the last queued reply is dated from that attempt; the earliest over the nodes dates the round', () => {
  const marks = new BusyMarks();
  marks.note(0, 100, held(7n));
  marks.note(1, 90, held(5n));
  marks.note(2, 95, held(6n));
  const round = marks.roundOf([granted(8n), granted(8n), granted(8n)], 3, 2);
  assert.equal(round?.start, 90);
  assert.deepEqual(
    round?.replies.map((r) => r.kind),
    ['granted', 'granted', 'granted'],
  );
});

test('a later queued reply is the tighter date, and a grant not above its counter may be older than it: not dated', () => {
  const marks = new BusyMarks();
  marks.note(0, 100, held(7n));
  marks.note(0, 200, held(9n));
  assert.equal(marks.roundOf([granted(10n)], 1, 1)?.start, 200);
  // A grant of fence 9 or less was issued before that reply was read: a late message of an earlier grant.
  assert.equal(marks.roundOf([granted(9n)], 1, 1), undefined);
  assert.equal(marks.roundOf([granted(3n)], 1, 1), undefined);
});

test('a node untrusted when its reply or its grant was read is not judged from them: left to an attempt', () => {
  const marks = new BusyMarks();
  marks.note(0, 100, held(7n));
  marks.note(1, 100, { ...held(7n), trusted: false });
  assert.equal(marks.roundOf([granted(8n), granted(8n)], 2, 2), undefined, 'node 1 was untrusted at the last look');
  assert.equal(marks.roundOf([granted(8n), undefined], 2, 1), undefined, 'nor as the busy node beside a grant');
  const untrusted: AcquireReply = { ...granted(8n), trusted: false } as AcquireReply;
  assert.equal(marks.roundOf([untrusted], 1, 1), undefined, 'a grant from an untrusted counter');
});

test('another epoch (the node lost its data: another counter), or no queued reply from the node: not dated', () => {
  const marks = new BusyMarks();
  marks.note(0, 100, held(7n));
  assert.equal(marks.roundOf([granted(8n, 'e2')], 1, 1), undefined, 'another epoch');
  assert.equal(marks.roundOf([granted(8n), granted(8n)], 2, 2), undefined, 'node 1 never answered a queued attempt');
  assert.equal(marks.roundOf([{ kind: 'error', error: new Error('x') }], 1, 1), undefined, 'not a grant');
});

test('a node that has not named us yet counts as its last reply said (busy); fewer dated grants than a quorum is no round', () => {
  const marks = new BusyMarks();
  marks.note(0, 100, held(7n));
  marks.note(1, 100, held(7n));
  marks.note(2, 100, held(4n));
  const round = marks.roundOf([granted(8n), undefined, granted(8n)], 3, 2);
  assert.equal(round?.start, 100);
  assert.deepEqual(
    round?.replies.map((r) => r.kind),
    ['granted', 'held', 'granted'],
  );
  assert.equal(marks.roundOf([granted(8n), undefined, undefined], 3, 2), undefined, 'fewer than a quorum: the next attempt takes them');
  assert.equal(marks.roundOf([undefined, undefined, undefined], 3, 2), undefined);
});
