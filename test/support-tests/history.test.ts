// The history checker on hand-made histories: it must pass a clean one and
// catch each kind of violation, naming both conflicting records.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHistory, decodeRecord, encodeRecord, type HistoryRecord, type StoreWrite } from '../support/faults/index.js';

const MS = 1_000_000n;
let n = 0;
/** A released holding of `r` from `from` to `to` ms (valid until `valid` ms, default well after). */
function hold(worker: string, fence: number | string, from: number, to: number, extra: Partial<HistoryRecord> = {}): HistoryRecord {
  return {
    resource: 'r',
    fence: String(fence),
    owner: `owner-${++n}`,
    worker,
    acquiredAt: BigInt(from) * MS,
    validUntil: BigInt(to + 1_000) * MS,
    endedAt: BigInt(to) * MS,
    endReason: 'released',
    ...extra,
  };
}
const write = (fence: number | string, accepted: boolean, at: number): StoreWrite => ({
  fence: String(fence),
  accepted,
  at: BigInt(at) * MS,
});

/** Asserts exactly one violation, mentioning `kind` and both records (by worker and fence). */
function assertOneViolation(result: ReturnType<typeof checkHistory>, kind: RegExp, ...mentions: string[]): void {
  assert.equal(result.ok, false, 'the checker passed a bad history');
  assert.equal(result.violations.length, 1, result.violations.join('\n'));
  const [v = ''] = result.violations;
  assert.match(v, kind);
  for (const m of mentions) assert.ok(v.includes(m), `violation does not show ${m}:\n${v}`);
}

describe('checkHistory', () => {
  const clean = [hold('a', 1, 0, 10), hold('b', 2, 11, 20), hold('a', 3, 21, 30), { ...hold('x', 1, 5, 25), resource: 'other' }];
  const cleanLog = [write(1, true, 5), write(2, true, 15), write(1, false, 16), write(2, false, 17), write(3, true, 25)];

  test('passes a clean history with its store log', () => {
    assert.deepEqual(checkHistory(clean, { r: cleanLog }), { ok: true, violations: [] });
    assert.deepEqual(checkHistory([]), { ok: true, violations: [] });
  });

  test('fails on overlapping valid windows', () => {
    const result = checkHistory([hold('a', 1, 0, 10), hold('b', 2, 8, 20)]);
    assertOneViolation(result, /overlapping valid windows/, 'worker=a fence=1', 'worker=b fence=2');
  });

  test('a window ends at validity, not at the late release: no overlap after validUntil', () => {
    // a was paused past its lease: it released at 20 ms but was only valid until 9 ms.
    const late = hold('a', 1, 0, 20, { validUntil: 9n * MS, endReason: 'lost' });
    assert.deepEqual(checkHistory([late, hold('b', 2, 10, 30)]).violations, []);
    // ...while still valid at 10 ms it does overlap.
    const stillValid = hold('a', 1, 0, 20, { validUntil: 11n * MS, endReason: 'lost' });
    assertOneViolation(checkHistory([stillValid, hold('b', 2, 10, 30)]), /overlapping/, 'worker=a', 'worker=b');
  });

  test('fails on a fence going backwards, and on a repeated fence', () => {
    assertOneViolation(checkHistory([hold('a', 5, 0, 10), hold('b', 4, 11, 20)]), /fence did not increase/, 'fence=5', 'worker=b fence=4');
    assertOneViolation(
      checkHistory([hold('a', 5, 0, 10), hold('b', 5, 11, 20)]),
      /fence did not increase/,
      'worker=a fence=5',
      'worker=b fence=5',
    );
    // Exact past 2^53, where Number would call these equal.
    const big = [hold('a', '9007199254740993', 0, 10), hold('b', '9007199254740992', 11, 20)];
    assertOneViolation(checkHistory(big), /fence did not increase/, '9007199254740993', '9007199254740992');
  });

  test('a holding with an empty window (never validly held) is not ordered by fence', () => {
    const neverValid = hold('a', 1, 12, 15, { validUntil: 12n * MS, endReason: 'lost' });
    assert.deepEqual(checkHistory([hold('b', 2, 0, 10), neverValid]).violations, []);
  });

  test('fails on an accepted stale write, naming both writes and their holders', () => {
    const log = [write(1, true, 5), write(3, true, 25), write(2, true, 26)];
    const records = [hold('a', 1, 0, 10), hold('b', 2, 11, 20), hold('c', 3, 21, 30)];
    assertOneViolation(
      checkHistory(records, log),
      /accepted a stale write/,
      'write fence=3 accepted',
      'write fence=2 accepted',
      'worker=b',
      'worker=c',
    );
    assertOneViolation(checkHistory(records, [write(1, true, 5), write(1, true, 6)]), /accepted a stale write/, 'fence=1');
  });

  test('fails when the store rejects a fresh write', () => {
    assertOneViolation(checkHistory([hold('a', 1, 0, 10)], [write(1, false, 5)]), /rejected a fresh write/, 'write fence=1 rejected');
  });

  test('one store log for several resources is ambiguous', () => {
    assert.throws(() => checkHistory(clean, cleanLog), TypeError);
  });

  test('records survive encode/decode with exact bigints; garbage is refused', () => {
    const r = hold('a', '123456789012345678901234567890', 1, 2, { acquiredAt: 2n ** 63n + 7n, endReason: 'lost' });
    const line = encodeRecord(r);
    assert.ok(!line.includes('\n'), 'a record must be one line');
    assert.deepEqual(decodeRecord(line), r);
    assert.throws(() => decodeRecord('{"resource":"r"}'), TypeError);
    assert.throws(() => decodeRecord(line.replace('"lost"', '"gone"')), TypeError);
  });
});
