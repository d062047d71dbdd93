// The workers' operation generator alone (no processes): a pure function of the worker's seed, drawing every
// kind of client operation the schedules ask for, on two resources only when there are two to take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { variedOps, type HoldOp, type OpVariation } from '../support/faults/index.js';
import { generateSchedule, TTL_MS } from './schedule.js';

const DRAWS = 2_000;
const draw = (v: OpVariation, resources: readonly string[], n = DRAWS): HoldOp[] => {
  const next = variedOps(v, resources);
  return Array.from({ length: n }, () => next());
};
/** The schedules' own variations, so the test sees the rates they run with. */
const variation = (seed: number): OpVariation => generateSchedule(seed).managers[0]![0]!;

test('the operations are a pure function of the variation, which is JSON-safe', () => {
  const v = variation(7);
  assert.deepEqual(JSON.parse(JSON.stringify(v)), v);
  assert.deepEqual(draw(v, ['r0', 'r1', 'r2'], 200), draw(JSON.parse(JSON.stringify(v)) as OpVariation, ['r0', 'r1', 'r2'], 200));
  assert.notDeepEqual(draw(v, ['r0', 'r1'], 50), draw({ ...v, seed: v.seed + 1 }, ['r0', 'r1'], 50));
});

test('every kind is drawn, on one resource and on two; acquires extend, skip extends and ask for new ttls', () => {
  const seen = new Set<string>();
  for (const op of draw(variation(11), ['r0', 'r1', 'r2'])) {
    seen.add(`${op.kind}/${op.resources.length}`);
    assert.ok(op.resources.every((r) => ['r0', 'r1', 'r2'].includes(r)));
    assert.deepEqual([...op.resources].sort(), op.resources, 'sorted');
    assert.equal(new Set(op.resources).size, op.resources.length, 'two different resources');
    if (op.kind !== 'acquire') continue;
    assert.ok(op.slices.length >= 1 && op.slices.length <= 4);
    assert.equal(op.slices.at(-1)!.extend, null, 'the writes and the release come after the last slice, not an extend');
    for (const s of op.slices) {
      seen.add(`extend ${s.extend === null ? 'none' : s.extend === 'same' ? 'same' : 'new ttl'}`);
      if (typeof s.extend === 'number') assert.ok(s.extend >= TTL_MS[0] && s.extend <= TTL_MS[1], 'rule shared-ttl-ceiling');
    }
    // Work past the lease with no extend before it ends: the lease runs out, the late write meets the fence.
    const unextended = op.slices.findIndex((s, i) => s.workMs > op.ttl && (i === 0 || op.slices[i - 1]!.extend === null));
    if (unextended >= 0) seen.add('acquire work past the ttl unextended');
  }
  const kinds = ['withLock', 'acquire', 'tryAcquire'];
  const expected = [
    ...kinds.flatMap((k) => [`${k}/1`, `${k}/2`]),
    'extend none',
    'extend same',
    'extend new ttl',
    'acquire work past the ttl unextended',
  ];
  assert.deepEqual([...seen].sort(), expected.sort());
});

test('one resource: no multi-resource operation, every other kind still drawn', () => {
  const ops = draw(variation(13), ['r0']);
  assert.ok(ops.every((op) => op.resources.length === 1 && op.resources[0] === 'r0'));
  assert.deepEqual([...new Set(ops.map((op) => op.kind))].sort(), ['acquire', 'tryAcquire', 'withLock']);
});

test('rates absent: withLock only, as before the other kinds existed', () => {
  const { acquireRate, tryAcquireRate, multiRate, slices, skipExtendRate, newTtlRate, ...old } = variation(17);
  void [acquireRate, tryAcquireRate, multiRate, slices, skipExtendRate, newTtlRate];
  const ops = draw(old, ['r0', 'r1']);
  assert.ok(ops.every((op) => op.kind === 'withLock' && op.resources.length === 1));
});
