// The schedule generator alone (no processes): a pure function of the seed, within its rules unless one is lifted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { variedOps } from '../support/faults/index.js';
import { brokenRules, generateSchedule, MINORITY, NODES, UNSAFE, type Schedule, type UnsafeName } from './schedule.js';

const SEEDS = Array.from({ length: 500 }, (_, i) => i * 7919 + 1);
const lostAtOnce = (s: Schedule): number =>
  Math.max(0, ...s.steps.map((st) => (st.fault.kind === 'restart-empty' ? st.fault.nodes.length : 0)));

test('a schedule is a pure function of its seed (and of --unsafe)', () => {
  for (const seed of SEEDS.slice(0, 50)) {
    assert.deepEqual(generateSchedule(seed), generateSchedule(seed));
    assert.deepEqual(generateSchedule(seed, 'no-quarantine'), generateSchedule(seed, 'no-quarantine'));
  }
  assert.notDeepEqual(generateSchedule(1).steps, generateSchedule(2).steps);
});

test('a worker’s operations are a function of its seed', () => {
  const v = generateSchedule(42).variations[0]!;
  const draw = (): unknown[] => {
    const next = variedOps(v, ['a', 'b']);
    return Array.from({ length: 20 }, () => next());
  };
  assert.deepEqual(draw(), draw());
});

test('safe schedules keep every rule; at most a minority loses data at once; faults of every kind are drawn', () => {
  const kinds = new Set<string>();
  for (const seed of SEEDS) {
    const s = generateSchedule(seed);
    assert.deepEqual(brokenRules(s), [], `seed ${seed}`);
    assert.equal(s.restartQuarantine, 'auto');
    assert.ok(lostAtOnce(s) <= MINORITY, `seed ${seed}`);
    for (const st of s.steps) kinds.add(st.fault.kind);
  }
  assert.deepEqual([...kinds].sort(), ['cut', 'flushall', 'kill', 'latency', 'pause-node', 'pause-worker', 'restart-empty']);
});

test('--unsafe lifts its rules: no-quarantine turns the quarantine off and restarts majorities; the rest still hold', () => {
  for (const name of Object.keys(UNSAFE) as UnsafeName[]) {
    const schedules = SEEDS.map((seed) => generateSchedule(seed, name));
    for (const s of schedules) assert.deepEqual(brokenRules(s), [], `seed ${s.seed}`);
    assert.ok(schedules.some((s) => lostAtOnce(s) === NODES));
    // Checked against the safe rules, some break majority-keeps-data.
    assert.ok(schedules.some((s) => brokenRules({ ...s, unsafe: null, restartQuarantine: 'auto' }).length > 0));
  }
  assert.equal(generateSchedule(1, 'no-quarantine').restartQuarantine, false);
  assert.equal(generateSchedule(1, 'majority-loss').restartQuarantine, 'auto');
});
