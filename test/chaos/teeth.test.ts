// The chaos generator's CI budget, part 1: it has teeth.
// - With --unsafe no-quarantine (restartQuarantine: false, majorities restarted empty) it finds the
//   majority-restart double grant from scratch within a bounded number of schedules.
// - With --unsafe fast-clocks (a majority of nodes 1.5-3x fast, under faketime) it finds two valid holders.
// - With --unsafe wakeup-grant (a waiter takes the hand-over's wake-up as its grant, unconfirmed) it finds two
//   valid holders or a fence that did not increase.
// Each runs the real command (test/chaos/main.ts) in a child process, as `npm run chaos` does, one at a time: they
// must catch a race. `npm test` runs this file alone, after the others (scripts/run-tests.mjs): starved by the files
// beside it, a whole run could miss every schedule's race. Part 2, that the library passes the same runs under
// every rule, is rules.test.ts, which runs beside the other files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { faketimeAvailable } from '../support/faults/index.js';
import { requireComponent } from '../support/optional.js';
import { chaos } from './run-chaos.js';

// From a seed whose own schedule has the bug's ingredients: seed 4014 restarts all five nodes empty three times
// (t+310, t+876 and t+2116 ms, with two worker pauses, over three resources). Its schedule alone showed the
// violation in 6 replays of 6 (`npm run chaos -- --unsafe no-quarantine --seed 4014 --schedules 1 --no-shrink`,
// 2026-11-26, on a machine loaded by other work), so the test pays one schedule (~6 s), not the search from
// seed 4000 (the 1st to 4th schedule there; 7th from seeds 1000 and 3000). The budget leaves room for a
// starved machine missing the race: the schedule is the seed's, the timing is the machine's. (Twice in loaded
// suite runs, seeds 4014-4021 all missed it because their empty restarts "failed to start: exited with SIGKILL":
// a restart still waiting for its server when the next step restarted the same node, each killing the other's
// server. LocalRedisNode now runs a node's kills and restarts one after another.) It runs alone, not beside
// another chaos run.
const TEETH_SEED = 4014;
const TEETH_BUDGET = 8;

test(`--unsafe no-quarantine finds the majority-restart double grant within ${TEETH_BUDGET} schedules`, async () => {
  const run = await chaos(
    ['--unsafe', 'no-quarantine', '--seed', String(TEETH_SEED), '--schedules', String(TEETH_BUDGET), '--until-violation', '--no-shrink'],
    // A bound for a hang, not a wait: the whole budget at the ~17 s a schedule that a load average near 30 gave.
    150_000,
  );
  console.log(`# ${run.output.trim().split('\n').at(-1)}`);
  assert.equal(run.violations, 1, run.output);
  // Two holders valid at once, or (the counters reset with the data) a fence going backwards: both the majority restart's doing.
  assert.match(run.output, /overlapping valid windows|fence did not increase/);
  assert.match(run.output, /restart empty nodes( \d,){2,}/, 'the schedule restarted a majority empty');
  assert.match(run.output, /replay with: npm run chaos -- --seed \d+ --schedules 1 --unsafe no-quarantine/);
});

// The hand-over inside the release, taken up unconfirmed (src/redis/planted-flaws.ts): a waiter named by a release
// counts the lock as its own from the wake-up, for its ttl, with a fence no node issued. Measured 2026-11-27: from
// seeds 1, 1000, 4000 and 7000 the first schedule showed it each time (2-12 violations: overlapping valid windows,
// the handed key having kept only what was left of the waiter's place in line, and fences not increasing).
const WAKEUP_GRANT_BUDGET = 3;

test(`--unsafe wakeup-grant finds a lock taken up from a wake-up within ${WAKEUP_GRANT_BUDGET} schedules`, async () => {
  const run = await chaos(
    ['--unsafe', 'wakeup-grant', '--seed', '1000', '--schedules', String(WAKEUP_GRANT_BUDGET), '--until-violation', '--no-shrink'],
    90_000,
  );
  console.log(`# ${run.output.trim().split('\n').at(-1)}`);
  assert.equal(run.violations, 1, run.output);
  assert.match(run.output, /overlapping valid windows|fence did not increase/);
  assert.match(run.output, /replay with: npm run chaos -- --seed \d+ --schedules 1 --unsafe wakeup-grant/);
});

// Measured (docs/reliability.md): from seeds 1000, 2000 and 3000 the first schedule already showed two holders
// valid at once (a majority of nodes expiring keys 1.5-3x early). Budget 5 for a slower machine missing a race.
// One shrink replay shows the shrinking (each replay is a whole schedule, ~6 s; two added ~6 s and checked no more).
const FAST_CLOCKS_BUDGET = 5;

test(
  `--unsafe fast-clocks finds overlapping valid windows within ${FAST_CLOCKS_BUDGET} schedules`,
  { skip: requireComponent(faketimeAvailable(), 'faketime (node clock rates)', 'faketime') },
  async () => {
    // Shrunk too (1 replay): the clock rates alone break the windows, so fewer steps keep failing.
    const run = await chaos(
      [
        '--unsafe',
        'fast-clocks',
        '--seed',
        '1000',
        '--schedules',
        String(FAST_CLOCKS_BUDGET),
        '--until-violation',
        '--shrink-replays',
        '1',
      ],
      90_000,
    );
    console.log(`# ${run.output.trim().split('\n').at(-1)}`);
    assert.equal(run.violations, 1, run.output);
    assert.match(run.output, /overlapping valid windows/);
    assert.match(run.output, /shrunk to \d+ of \d+ steps/, 'the failing schedule was shrunk');
    assert.match(run.output, /replay it with: npm run chaos -- --seed \d+ --schedules 1 --unsafe fast-clocks/);
    // The fences still increased: the store turned every late writer away (only the windows overlapped).
    assert.doesNotMatch(run.output, /store accepted a stale write|fence did not increase/);
  },
);
