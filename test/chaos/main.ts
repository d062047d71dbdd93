// npm run chaos -- [--backend redis|etcd|zookeeper] [--schedules N | --minutes M] [--seed S] [--unsafe <name>] [--until-violation] [--no-shrink] [--verbose]
//
// Runs random fault schedules against real processes, checks every history, and prints each violation with its
// seed, its steps and both conflicting records. --backend picks the lock store and its generator: redis (the
// default: 5 Redis nodes, schedule.ts and run-schedule.ts) or etcd / zookeeper (3 members,
// consensus-schedule.ts and consensus-run.ts). Seeds run S, S+1, ...; `--seed S --schedules 1` (with the same
// --backend) replays schedule S: the same steps and the same worker choices (real timing still varies, so a
// violation that depends on a race may take a few replays to show again).
// The last line is always: schedules N, operations M, faults F, violations V (seeds S0-S1)
import { parseArgs } from 'node:util';
import { runConsensusSchedule } from './consensus-run.js';
import {
  CONSENSUS_BACKENDS,
  CONSENSUS_RULES,
  CONSENSUS_UNSAFE,
  describeConsensusSchedule,
  generateConsensusSchedule,
  isConsensusBackend,
  isConsensusUnsafeName,
  type ConsensusUnsafeName,
} from './consensus-schedule.js';
import { runSchedule, type Outcome } from './run-schedule.js';
import { describeSchedule, generateSchedule, isUnsafeName, RULES, UNSAFE } from './schedule.js';
import { clocksApplied } from './clocks.js';
import { shrink } from './shrink.js';

type BackendName = 'redis' | (typeof CONSENSUS_BACKENDS)[number];
const BACKENDS: readonly BackendName[] = ['redis', ...CONSENSUS_BACKENDS];

/** What main needs of a backend's generator and runner; a schedule is anything with a seed and steps. */
interface Driver<S extends { readonly seed: number; readonly steps: readonly unknown[] }> {
  generate(seed: number): S;
  run(s: S): Promise<Outcome>;
  describe(s: S): string;
}

const USAGE =
  `usage: npm run chaos -- [--backend ${BACKENDS.join('|')}] [--schedules N | --minutes M] [--seed S] ` +
  `[--unsafe ${[...new Set([...Object.keys(UNSAFE), ...Object.keys(CONSENSUS_UNSAFE)])].join('|')}] ` +
  `[--until-violation] [--no-shrink] [--shrink-replays K] [--steps i,j,...] [--verbose]`;

function parse(): {
  backend: BackendName;
  schedules: number;
  minutes: number | undefined;
  seed: number;
  unsafe: string | null;
  untilViolation: boolean;
  shrinkReplays: number;
  verbose: boolean;
  steps: number[] | undefined;
} {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'redis' },
      schedules: { type: 'string' },
      minutes: { type: 'string' },
      seed: { type: 'string' },
      unsafe: { type: 'string' },
      'until-violation': { type: 'boolean', default: false },
      'no-shrink': { type: 'boolean', default: false },
      'shrink-replays': { type: 'string' },
      verbose: { type: 'boolean', default: false },
      steps: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const fail = (why: string): never => {
    console.error(`${why}\n${USAGE}`);
    process.exit(2);
  };
  if (values.help) {
    const list = (entries: Array<[string, string]>): string => entries.map(([k, v]) => `  ${k}: ${v}`).join('\n');
    const lifts = (u: Record<string, { lifts: readonly string[]; what: string }>): Array<[string, string]> =>
      Object.entries(u).map(([k, v]) => [k, `lifts ${v.lifts.join(', ')}; ${v.what}`]);
    console.log(`${USAGE}\n\n--backend redis (the default): 5 Redis nodes (Redlock)\nrules:\n${list(Object.entries(RULES))}`);
    console.log(`--unsafe:\n${list(lifts(UNSAFE))}`);
    console.log(
      `\n--backend etcd | zookeeper: a 3-member etcd cluster or a 3-server ZooKeeper ensemble\nrules:\n${list(Object.entries(CONSENSUS_RULES))}`,
    );
    console.log(`--unsafe (no-quarantine is Redis's only: etcd and ZooKeeper have no quarantine):\n${list(lifts(CONSENSUS_UNSAFE))}`);
    process.exit(0);
  }
  const backend = values.backend;
  if (!(BACKENDS as readonly string[]).includes(backend)) fail(`unknown --backend ${backend}`);
  const num = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    return Number.isFinite(n) && n >= 0 ? n : fail(`--${name} must be a non-negative number, got ${v}`);
  };
  if (values.schedules !== undefined && values.minutes !== undefined) fail('--schedules and --minutes exclude each other');
  const unsafe = values.unsafe ?? null;
  const known = backend === 'redis' ? isUnsafeName : isConsensusUnsafeName;
  if (unsafe !== null && !known(unsafe)) fail(`unknown --unsafe ${unsafe} for --backend ${backend}`);
  if (unsafe === 'fast-clocks' && !clocksApplied()) fail('--unsafe fast-clocks needs libfaketime (Debian: apt-get install -y faketime)');
  return {
    backend: backend as BackendName,
    schedules: num('schedules', values.schedules) ?? (values.minutes === undefined ? 10 : Infinity),
    minutes: num('minutes', values.minutes),
    seed: Math.floor(num('seed', values.seed) ?? Math.floor(Math.random() * 1e6)),
    unsafe,
    untilViolation: values['until-violation'],
    shrinkReplays: values['no-shrink'] ? 0 : (num('shrink-replays', values['shrink-replays']) ?? 12),
    verbose: values.verbose,
    // Only these steps of each schedule (by index): replays what shrinking left.
    steps:
      values.steps === undefined
        ? undefined
        : values.steps
            .split(',')
            .filter(Boolean)
            .map((x) => num('steps', x)!),
  };
}

/** The driver of `backend`, with `unsafe` (already checked against that backend's names) and `--steps` applied. */
function driverFor(
  backend: BackendName,
  unsafe: string | null,
  steps: readonly number[] | undefined,
): Driver<{ seed: number; steps: readonly unknown[] }> {
  const only = <S extends { readonly steps: readonly unknown[] }>(s: S): S =>
    steps ? { ...s, steps: s.steps.filter((_, i) => steps.includes(i)) } : s;
  if (backend === 'redis') {
    const d: Driver<ReturnType<typeof generateSchedule>> = {
      generate: (seed) => only(generateSchedule(seed, unsafe as keyof typeof UNSAFE | null)),
      run: runSchedule,
      describe: describeSchedule,
    };
    return d as unknown as Driver<{ seed: number; steps: readonly unknown[] }>;
  }
  if (!isConsensusBackend(backend)) throw new Error(`unknown backend ${backend}`);
  const d: Driver<ReturnType<typeof generateConsensusSchedule>> = {
    generate: (seed) => only(generateConsensusSchedule(seed, backend, unsafe as ConsensusUnsafeName | null)),
    run: runConsensusSchedule,
    describe: describeConsensusSchedule,
  };
  return d as unknown as Driver<{ seed: number; steps: readonly unknown[] }>;
}

/** The command that replays `seed` alone: with its --unsafe, --steps and --backend. */
function replayCommand(seed: number, o: ReturnType<typeof parse>, steps: readonly number[] | undefined): string {
  return (
    `npm run chaos -- --seed ${seed} --schedules 1${o.unsafe ? ` --unsafe ${o.unsafe}` : ''}` +
    `${steps ? ` --steps ${steps.join(',')}` : ''} --backend ${o.backend}`
  );
}

function report(seed: number, description: string, stepCount: number, o: Outcome, elapsedMs: number, opts: ReturnType<typeof parse>): void {
  const line =
    `seed ${seed}: ${o.operations} operations, ${o.faults}/${stepCount} faults, ` +
    `${o.violations.length} violations (${(elapsedMs / 1000).toFixed(1)} s)`;
  console.log(line);
  if (opts.verbose) console.log(description + (o.summary ? `\n  ${o.summary}` : ''));
  // A worker that did not exit by itself (an unhandled rejection, a hang) is always shown: not a violation, but a finding.
  for (const w of o.warnings) if (opts.verbose || o.violations.length > 0 || / exited /.test(w)) console.log(`  warning: ${w}`);
  // Fast clocks as measured (run-schedule.ts): a fast-clocks schedule without a violation says what its clocks did.
  if (o.clockRates) console.log(`  ${o.clockRates}`);
  if (o.violations.length > 0) {
    console.log(`VIOLATION, replay with: ${replayCommand(seed, opts, opts.steps)}`);
    console.log(description);
    for (const v of o.violations) console.log(v.replace(/^/gm, '  '));
  }
}

async function main(): Promise<void> {
  const o = parse();
  const driver = driverFor(o.backend, o.unsafe, o.steps);
  const deadline = o.minutes === undefined ? Infinity : performance.now() + o.minutes * 60_000;
  let schedules = 0;
  let operations = 0;
  let faults = 0;
  let violations = 0;
  let lastSeed = o.seed;
  if (o.unsafe) {
    const what =
      o.backend === 'redis' ? UNSAFE[o.unsafe as keyof typeof UNSAFE].what : CONSENSUS_UNSAFE[o.unsafe as ConsensusUnsafeName].what;
    console.log(`--unsafe ${o.unsafe}: ${what}`);
  }
  if (o.backend === 'redis' && !clocksApplied())
    console.log('faketime is not installed: every node runs at the real clock rate (Debian: apt-get install -y faketime)');
  for (let seed = o.seed; schedules < o.schedules && performance.now() < deadline; seed++) {
    const schedule = driver.generate(seed);
    const t = performance.now();
    const outcome = await driver.run(schedule);
    schedules++;
    lastSeed = seed;
    operations += outcome.operations;
    faults += outcome.faults;
    violations += outcome.violations.length > 0 ? 1 : 0;
    report(seed, driver.describe(schedule), schedule.steps.length, outcome, performance.now() - t, o);
    if (outcome.violations.length > 0) {
      if (o.shrinkReplays > 0) {
        const smaller = await shrink(schedule, o.shrinkReplays, driver.run, (msg) => console.log(`  shrink: ${msg}`));
        // Indices into the seed's whole schedule, whatever --steps had already left out.
        const all = driverFor(o.backend, o.unsafe, undefined).generate(seed).steps;
        const kept = smaller.steps.map((st) => all.findIndex((x) => JSON.stringify(x) === JSON.stringify(st)));
        console.log(`shrunk to ${smaller.steps.length} of ${schedule.steps.length} steps:\n${driver.describe(smaller)}`);
        console.log(`replay it with: ${replayCommand(seed, o, kept)}`);
      }
      if (o.untilViolation) break;
    }
  }
  console.log(`schedules ${schedules}, operations ${operations}, faults ${faults}, violations ${violations} (seeds ${o.seed}-${lastSeed})`);
}

main().then(
  // Exit explicitly: a proxy that blackholed connections can leave a handle behind (docs/reliability.md, Limits).
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
