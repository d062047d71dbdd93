// The schedule generator alone (no processes): a pure function of the seed, within its rules unless one is lifted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { variedOps } from '../support/faults/index.js';
import { FAST_RATE, SAFE_DRIFT } from './clocks.js';
import { brokenRules, generateSchedule, MANAGERS, MINORITY, NODES, UNSAFE, type Schedule, type UnsafeName } from './schedule.js';
import {
  brokenConsensusRules,
  CONSENSUS_BACKENDS,
  generateConsensusSchedule,
  LEASES,
  MEMBER_MINORITY,
  MEMBERS,
  type ConsensusSchedule,
} from './consensus-schedule.js';

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
  const v = generateSchedule(42).managers[0]![0]!;
  const draw = (): unknown[] => {
    const next = variedOps(v, ['a', 'b']);
    return Array.from({ length: 20 }, () => next());
  };
  assert.deepEqual(draw(), draw());
});

test('every worker runs 2-3 managers, each with its own seed, drawn from their own stream of the seed', () => {
  const counts = new Set<number>();
  for (const backend of ['redis', ...CONSENSUS_BACKENDS] as const) {
    for (const seed of SEEDS) {
      const s = backend === 'redis' ? generateSchedule(seed) : generateConsensusSchedule(seed, backend);
      assert.equal(s.managers.length, s.workers, `${backend} seed ${seed}`);
      for (const m of s.managers) {
        assert.ok(m.length >= MANAGERS[0] && m.length <= MANAGERS[1], `${backend} seed ${seed}: ${m.length} managers`);
        counts.add(m.length);
        // Only the seed differs between a worker's managers: the rules' ranges are the same for all.
        for (const v of m) assert.deepEqual({ ...v, seed: 0 }, { ...m[0]!, seed: 0 });
      }
      const seeds = s.managers.flat().map((v) => v.seed);
      assert.equal(new Set(seeds).size, seeds.length, `${backend} seed ${seed}: two managers share a seed`);
    }
  }
  assert.deepEqual([...counts].sort(), [2, 3]);
  // Their own stream of the seed: the same counts and seeds on every call, whatever --unsafe changes in the steps.
  for (const seed of SEEDS.slice(0, 50)) {
    assert.deepEqual(generateSchedule(seed).managers, generateSchedule(seed).managers);
    assert.deepEqual(generateSchedule(seed, 'no-quarantine').managers, generateSchedule(seed).managers);
    assert.deepEqual(generateConsensusSchedule(seed, 'etcd', 'majority-loss').managers, generateConsensusSchedule(seed, 'etcd').managers);
  }
  assert.notDeepEqual(generateSchedule(1).managers, generateSchedule(2).managers);
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

test('--unsafe lifts its rules: no-quarantine and majority-loss restart majorities, fast-clocks speeds up a majority, wakeup-grant plants its flaw; the rest still hold', () => {
  for (const name of Object.keys(UNSAFE) as UnsafeName[]) {
    const schedules = SEEDS.map((seed) => generateSchedule(seed, name));
    for (const s of schedules) assert.deepEqual(brokenRules(s), [], `seed ${s.seed}`);
    // Checked against the safe rules, some break the rule lifted.
    assert.ok(
      schedules.some((s) => brokenRules({ ...s, unsafe: null, restartQuarantine: 'auto' }).length > 0),
      name,
    );
    if (name === 'fast-clocks') {
      assert.ok(
        schedules.every((s) => s.clockRates.filter((r) => r >= FAST_RATE[0]).length === MINORITY + 1),
        name,
      );
      // Only the clocks differ from the seed's safe schedule.
      assert.deepEqual({ ...schedules[0]!, clockRates: [], unsafe: null }, { ...generateSchedule(SEEDS[0]!), clockRates: [] });
    } else if (name === 'wakeup-grant') {
      assert.ok(
        schedules.every((s) => s.plantedFlaw === 'wakeup-grant'),
        name,
      );
      // Only the library differs: the faults and every manager's choices are the seed's safe schedule's.
      assert.deepEqual({ ...schedules[0]!, plantedFlaw: null, unsafe: null }, generateSchedule(SEEDS[0]!));
    } else {
      assert.ok(
        schedules.some((s) => lostAtOnce(s) === NODES),
        name,
      );
    }
  }
  assert.equal(generateSchedule(1, 'no-quarantine').restartQuarantine, false);
  assert.equal(generateSchedule(1, 'majority-loss').restartQuarantine, 'auto');
  assert.equal(generateSchedule(1).plantedFlaw, null);
});

test('clock rates: inside the rule every node runs within SAFE_DRIFT of real time; a pure function of the seed', () => {
  for (const seed of SEEDS) {
    const { clockRates } = generateSchedule(seed);
    assert.equal(clockRates.length, NODES);
    for (const r of clockRates) assert.ok(Math.abs(r - 1) <= SAFE_DRIFT + 1e-9, `seed ${seed}: ${r}`);
  }
  assert.ok(SAFE_DRIFT < 0.01, 'under the default driftFactor');
  assert.notDeepEqual(generateSchedule(1).clockRates, generateSchedule(2).clockRates);
});

// The etcd and ZooKeeper generator (consensus-schedule.ts), alone: no processes.
const emptyAtOnce = (s: ConsensusSchedule): number =>
  Math.max(0, ...s.steps.map((st) => (st.fault.kind === 'restart-empty' ? st.fault.members.length : 0)));

test('a consensus schedule is a pure function of its seed and backend (and of --unsafe)', () => {
  for (const backend of CONSENSUS_BACKENDS) {
    for (const seed of SEEDS.slice(0, 50)) {
      assert.deepEqual(generateConsensusSchedule(seed, backend), generateConsensusSchedule(seed, backend));
      assert.deepEqual(
        generateConsensusSchedule(seed, backend, 'majority-loss'),
        generateConsensusSchedule(seed, backend, 'majority-loss'),
      );
    }
    assert.notDeepEqual(generateConsensusSchedule(1, backend).steps, generateConsensusSchedule(2, backend).steps);
  }
});

test('safe consensus schedules keep every rule: one member empty at a time, alone; pauses bounded; every fault kind drawn', () => {
  for (const backend of CONSENSUS_BACKENDS) {
    const kinds = new Set<string>();
    let pastLease = 0;
    for (const seed of SEEDS) {
      const s = generateConsensusSchedule(seed, backend);
      assert.deepEqual(brokenConsensusRules(s), [], `${backend} seed ${seed}`);
      assert.ok(emptyAtOnce(s) <= MEMBER_MINORITY, `${backend} seed ${seed}`);
      for (const st of s.steps) {
        kinds.add(st.fault.kind);
        // bounded-pauses, checked here on its own too: every pause and downtime ends before the workload.
        const f = st.fault;
        const lasts = 'ms' in f ? f.ms : 'downMs' in f ? f.downMs : 0;
        assert.ok(st.at + lasts <= s.durationMs, `${backend} seed ${seed}: ${JSON.stringify(st)}`);
        // Some worker pauses outlast the longest lease (etcd: ttl rounded up to whole seconds) or session (ZooKeeper).
        const longest = backend === 'etcd' ? Math.ceil(LEASES.etcd.ttlMs[1] / 1_000) * 1_000 : Math.max(...s.managerTtls);
        if (f.kind === 'pause-worker' && f.ms > longest) pastLease++;
      }
      if (backend === 'zookeeper') for (const t of s.managerTtls) assert.ok(t >= 1_000 && t <= 2_000);
    }
    assert.deepEqual(
      [...kinds].sort(),
      ['cut', 'kill', 'kill-leader', 'latency', 'pause-member', 'pause-worker', 'restart-empty'],
      backend,
    );
    assert.ok(pastLease > 20, `${backend}: only ${pastLease} worker pauses past the lease`);
  }
});

test('--unsafe majority-loss on a consensus backend restarts a majority empty at once (etcd: the whole cluster)', () => {
  for (const backend of CONSENSUS_BACKENDS) {
    const schedules = SEEDS.map((seed) => generateConsensusSchedule(seed, backend, 'majority-loss'));
    for (const s of schedules) assert.deepEqual(brokenConsensusRules(s), [], `${backend} seed ${s.seed}`);
    assert.ok(schedules.some((s) => emptyAtOnce(s) === MEMBERS));
    assert.ok(schedules.some((s) => brokenConsensusRules({ ...s, unsafe: null }).length > 0));
    if (backend === 'etcd') assert.ok(schedules.every((s) => [0, MEMBERS].includes(emptyAtOnce(s))));
  }
});
