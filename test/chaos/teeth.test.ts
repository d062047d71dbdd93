// The chaos generator's CI budget: it has teeth, and the library passes it.
// - With --unsafe no-quarantine (restartQuarantine: false, majorities restarted empty) it finds the
//   majority-restart double grant from scratch within a bounded number of schedules.
// - With --unsafe fast-clocks (a majority of nodes 1.5-3x fast, under faketime) it finds two valid holders.
// - With --unsafe wakeup-grant (a waiter takes the hand-over's wake-up as its grant, unconfirmed) it finds two
//   valid holders or a fence that did not increase.
// - A short run under every rule finds no violation.
// - The same short run on etcd and on ZooKeeper (--backend), skipped without them.
// All run the real command (test/chaos/main.ts) in a child process, as `npm run chaos` does: the unsafe runs
// one at a time (they must catch a race), the safe runs two at a time. `npm test` runs this file alone, after the
// others (scripts/run-tests.mjs): starved by the files beside it, a whole run could miss every schedule's race.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { faketimeAvailable } from '../support/faults/index.js';
import { tsEntry } from '../support/entry.js';
import { requireComponent, requireEtcd, requireZooKeeper } from '../support/optional.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LAST_LINE = /^schedules (\d+), operations (\d+), faults (\d+), violations (\d+) \(seeds (\d+)-(\d+)\)$/m;

interface Run {
  readonly output: string;
  readonly schedules: number;
  readonly operations: number;
  readonly faults: number;
  readonly violations: number;
}

function chaos(args: readonly string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsEntry('test/chaos/main.ts'), ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // On a hang: SIGTERM first, so that the run stops the servers it started by their PIDs (src/testing/processes.ts
    // does on SIGTERM; a SIGKILL left them running), then SIGKILL if it has not exited after a grace.
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      hardKill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      const m = LAST_LINE.exec(output);
      if (code !== 0 || !m) return reject(new Error(`chaos ${args.join(' ')} exited ${signal ?? code}\n${output}`));
      const [schedules, operations, faults, violations] = m.slice(1, 5).map(Number) as [number, number, number, number];
      resolve({ output, schedules, operations, faults, violations });
    });
  });
}

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

// The runs under every rule, two at a time: each mostly waits (on its schedule's 2.5-4 s of workload, on starting
// nodes, members and workers: ~6 s of CPU in ~15 s), and no violation under the rules is the claim at any load.
describe('under every rule', { concurrency: 2 }, () => {
  test('a short run under every rule: 4 schedules, 0 violations', async () => {
    const run = await chaos(['--seed', '1', '--schedules', '4'], 60_000);
    console.log(`# ${run.output.trim().split('\n').at(-1)}`);
    assert.equal(run.schedules, 4);
    assert.ok(run.operations > 20 && run.faults > 5, run.output);
    assert.equal(run.violations, 0, run.output);
  });

  // etcd and ZooKeeper (--backend): a short run under every rule finds no violation, with faults applied and
  // operations done. Measured: about 11 s a schedule for either (starting 3 members, a Redis store and the workers).
  for (const [backend, skip] of [
    ['etcd', requireEtcd('etcd (the chaos run on etcd)')],
    ['zookeeper', requireZooKeeper('ZooKeeper (the chaos run on ZooKeeper)')],
  ] as const) {
    test(`--backend ${backend}: a short run under every rule: 1 schedule, 0 violations`, { skip }, async () => {
      const run = await chaos(['--backend', backend, '--seed', '1', '--schedules', '1'], 60_000);
      console.log(`# ${run.output.trim().split('\n').at(-1)}`);
      assert.equal(run.schedules, 1);
      assert.ok(run.operations > 0 && run.faults > 0, run.output);
      assert.equal(run.violations, 0, run.output);
    });
  }
});
