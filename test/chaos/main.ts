// npm run chaos -- [--schedules N | --minutes M] [--seed S] [--unsafe <name>] [--until-violation] [--no-shrink] [--verbose]
//
// Runs random fault schedules (schedule.ts) against real Redis nodes, checks every history, and prints each
// violation with its seed, its steps and both conflicting records. Seeds run S, S+1, ...; `--seed S
// --schedules 1` replays schedule S: the same steps and the same worker choices (real timing still varies,
// so a violation that depends on a race may take a few replays to show again).
// The last line is always: schedules N, operations M, faults F, violations V (seeds S0-S1)
import { parseArgs } from 'node:util';
import { runSchedule, type Outcome } from './run-schedule.js';
import { describeSchedule, generateSchedule, isUnsafeName, RULES, UNSAFE, type Schedule } from './schedule.js';
import { clocksApplied } from './clocks.js';
import { shrink } from './shrink.js';

const USAGE = `usage: npm run chaos -- [--schedules N | --minutes M] [--seed S] [--unsafe ${Object.keys(UNSAFE).join('|')}] [--until-violation] [--no-shrink] [--shrink-replays K] [--steps i,j,...] [--verbose]`;

function parse(): {
  schedules: number;
  minutes: number | undefined;
  seed: number;
  unsafe: keyof typeof UNSAFE | null;
  untilViolation: boolean;
  shrinkReplays: number;
  verbose: boolean;
  steps: number[] | undefined;
} {
  const { values } = parseArgs({
    options: {
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
    console.log(
      `${USAGE}\n\nrules:\n${Object.entries(RULES)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}`,
    );
    console.log(
      `\n--unsafe:\n${Object.entries(UNSAFE)
        .map(([k, v]) => `  ${k}: lifts ${v.lifts.join(', ')}; ${v.what}`)
        .join('\n')}`,
    );
    process.exit(0);
  }
  const num = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    return Number.isFinite(n) && n >= 0 ? n : fail(`--${name} must be a non-negative number, got ${v}`);
  };
  if (values.schedules !== undefined && values.minutes !== undefined) fail('--schedules and --minutes exclude each other');
  const unsafe = values.unsafe ?? null;
  if (unsafe !== null && !isUnsafeName(unsafe)) fail(`unknown --unsafe ${unsafe}`);
  if (unsafe === 'fast-clocks' && !clocksApplied()) fail('--unsafe fast-clocks needs libfaketime (Debian: apt-get install -y faketime)');
  return {
    schedules: num('schedules', values.schedules) ?? (values.minutes === undefined ? 10 : Infinity),
    minutes: num('minutes', values.minutes),
    seed: Math.floor(num('seed', values.seed) ?? Math.floor(Math.random() * 1e6)),
    unsafe: unsafe as keyof typeof UNSAFE | null,
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

function report(s: Schedule, o: Outcome, elapsedMs: number, verbose: boolean, steps: readonly number[] | undefined): void {
  const line =
    `seed ${s.seed}: ${o.operations} operations, ${o.faults}/${s.steps.length} faults, ` +
    `${o.violations.length} violations (${(elapsedMs / 1000).toFixed(1)} s)`;
  console.log(line);
  if (verbose) console.log(describeSchedule(s));
  // A worker that did not exit by itself (an unhandled rejection, a hang) is always shown: not a violation, but a finding.
  for (const w of o.warnings) if (verbose || o.violations.length > 0 || / exited /.test(w)) console.log(`  warning: ${w}`);
  if (o.violations.length > 0) {
    console.log(
      `VIOLATION, replay with: npm run chaos -- --seed ${s.seed} --schedules 1${steps ? ` --steps ${steps.join(',')}` : ''}${s.unsafe ? ` --unsafe ${s.unsafe}` : ''}`,
    );
    console.log(describeSchedule(s));
    for (const v of o.violations) console.log(v.replace(/^/gm, '  '));
  }
}

async function main(): Promise<void> {
  const o = parse();
  const deadline = o.minutes === undefined ? Infinity : performance.now() + o.minutes * 60_000;
  let schedules = 0;
  let operations = 0;
  let faults = 0;
  let violations = 0;
  let lastSeed = o.seed;
  if (o.unsafe) console.log(`--unsafe ${o.unsafe}: ${UNSAFE[o.unsafe].what}`);
  if (!clocksApplied())
    console.log('faketime is not installed: every node runs at the real clock rate (Debian: apt-get install -y faketime)');
  for (let seed = o.seed; schedules < o.schedules && performance.now() < deadline; seed++) {
    const drawn = generateSchedule(seed, o.unsafe);
    const schedule = o.steps ? { ...drawn, steps: drawn.steps.filter((_, i) => o.steps!.includes(i)) } : drawn;
    const t = performance.now();
    const outcome = await runSchedule(schedule);
    schedules++;
    lastSeed = seed;
    operations += outcome.operations;
    faults += outcome.faults;
    violations += outcome.violations.length > 0 ? 1 : 0;
    report(schedule, outcome, performance.now() - t, o.verbose, o.steps);
    if (outcome.violations.length > 0) {
      if (o.shrinkReplays > 0) {
        const smaller = await shrink(schedule, o.shrinkReplays, (msg) => console.log(`  shrink: ${msg}`));
        const kept = drawn.steps.flatMap((st, i) => (smaller.steps.includes(st) ? [i] : []));
        console.log(`shrunk to ${smaller.steps.length} of ${schedule.steps.length} steps:\n${describeSchedule(smaller)}`);
        console.log(
          `replay it with: npm run chaos -- --seed ${seed} --schedules 1 --steps ${kept.join(',')}${o.unsafe ? ` --unsafe ${o.unsafe}` : ''}`,
        );
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
