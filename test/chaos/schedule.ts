// Random fault schedules (issue 18): a schedule is a pure function of its seed, so a failing one is
// replayed exactly with --seed (the faults and every manager's choices are the same; real timing is not).
// The generator's rules are the assumptions docs/reliability.md and docs/how-it-works.md state, each named;
// --unsafe <name> lifts one rule or switches one protection off, to show that the checker then finds the bug.
import { seededRandom } from '../../src/cli/demo/chaos.js';
import type { RestartQuarantine } from '../../src/index.js';
import type { OpVariation } from '../support/faults/index.js';
import { drawClockRates, SAFE_DRIFT } from './clocks.js';

/** Redlock over five nodes: a quorum is three, a minority two. */
export const NODES = 5;
export const MINORITY = Math.floor((NODES - 1) / 2);

/** The workload's lease range; the longest lease is the quarantine the rules reckon with. */
export const TTL_MS: readonly [number, number] = [400, 1_200];
const DRIFT_FACTOR = 0.01;
/** One quarantine period as the library measures it (longest ttl + drift), plus a margin for restarts and clocks. */
export const QUARANTINE_MS = TTL_MS[1] + Math.floor(TTL_MS[1] * DRIFT_FACTOR) + 2 + 300;

/** Besides withLock: acquire with explicit extends (some skipped, some with a new ttl), tryAcquire, and locks on two resources. */
export const OP_MIX = {
  acquireRate: 0.3,
  tryAcquireRate: 0.2,
  multiRate: 0.3,
  slices: [1, 4],
  skipExtendRate: 0.2,
  newTtlRate: 0.3,
} as const satisfies Partial<OpVariation>;

/** Every rule the generator keeps, with where it comes from. The code below names the rule it enforces. */
export const RULES = {
  'majority-keeps-data':
    'at most a minority of the nodes (2 of 5) lose their data (restarted empty, killed then restarted empty, FLUSHALL) ' +
    'within one quarantine period of each other (how-it-works.md: "as long as a majority of the nodes keeps its data"; ' +
    '"nodes keep their data, or the quarantine covers their loss")',
  'quarantine-on': "every manager runs restartQuarantine 'auto', the default (how-it-works.md, Restart quarantine)",
  'bounded-pauses':
    'every node or worker pause, node downtime and network fault ends before the workload does (a worker may be ' +
    'paused past its lease: that is the case fencing exists for, and the store must refuse its late write)',
  'same-clock-rate':
    `every node's clock runs within ${SAFE_DRIFT * 100} % of real time, under the default driftFactor 0.01 ` +
    '(how-it-works.md, Failure scenarios: clocks run at nearly the same rate); applied with libfaketime where faketime is installed',
  'shared-ttl-ceiling':
    'every worker draws its ttl from the same range, so no lease is longer than the ttls recorded on the nodes ' +
    '(how-it-works.md: a lease longer than any ttl recorded is not covered; draws are spread, so this holds only statistically early in a run)',
  'keys-left-alone': "nothing deletes fencelock's keys but a whole-node loss (FLUSHALL, an empty restart), which counts as data loss",
  'confirmed-handover':
    'a waiter woken by a release that handed it the lock confirms it with one request and counts its lease from that ' +
    "request's send time, never from the wake-up (how-it-works.md: the hand-over inside the release)",
} as const;
export type RuleName = keyof typeof RULES;

/** How many LockManagers each worker process runs: each with its own connections and its own concurrent hold loop. */
export const MANAGERS: readonly [number, number] = [2, 3];

/**
 * Each worker's managers, as one OpVariation each: the worker's own (drawn with the schedule) for the first, the
 * same with a new seed for each other. Drawn from their own stream of the seed, so adding managers left every
 * seed's steps and first-manager choices as they were (as drawClockRates does). Shared with consensus-schedule.ts.
 */
export function drawManagers(seed: number, workers: readonly OpVariation[]): OpVariation[][] {
  const random = seededRandom(seed ^ 0x1f83d9ab);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  return workers.map((v) => {
    const extra = int(MANAGERS[0], MANAGERS[1]) - 1;
    return [v, ...Array.from({ length: extra }, () => ({ ...v, seed: int(1, 2 ** 31 - 1) }))];
  });
}

/** What each --unsafe name lifts. */
export const UNSAFE = {
  'no-quarantine': {
    lifts: ['majority-keeps-data', 'quarantine-on'] as RuleName[],
    what: 'managers run restartQuarantine: false and the nemesis may restart a majority (up to all 5) empty at once',
  },
  'majority-loss': {
    lifts: ['majority-keeps-data'] as RuleName[],
    what: 'the nemesis may restart a majority empty; the quarantine stays on (the library claims this is covered while a node that kept its data answers)',
  },
  'wakeup-grant': {
    lifts: ['confirmed-handover'] as RuleName[],
    what:
      'a waiter woken by a release takes the wake-up as its grant, unconfirmed: valid for its ttl from the wake-up, ' +
      'with the fence after the last counter it saw (src/redis/planted-flaws.ts)',
  },
  'fast-clocks': {
    lifts: ['same-clock-rate'] as RuleName[],
    what: 'a majority of the nodes run their clocks 1.5-3x as fast as real time (libfaketime: needs the faketime package), far past driftFactor',
  },
} as const;
export type UnsafeName = keyof typeof UNSAFE;
export const isUnsafeName = (s: string): s is UnsafeName => Object.hasOwn(UNSAFE, s);

export type Fault =
  /** SIGKILL; the node stays down `downMs`, then comes back empty (no persistence) */
  | { readonly kind: 'kill'; readonly node: number; readonly downMs: number }
  /** kill and restart at once, empty, every node listed (together) */
  | { readonly kind: 'restart-empty'; readonly nodes: readonly number[] }
  | { readonly kind: 'flushall'; readonly node: number }
  /** SIGSTOP, SIGCONT after `ms` */
  | { readonly kind: 'pause-node'; readonly node: number; readonly ms: number }
  /** SIGSTOP a worker process (it may hold a lock), SIGCONT after `ms` */
  | { readonly kind: 'pause-worker'; readonly worker: number; readonly ms: number }
  /** the proxy in front of the node delays each direction by `latencyMs`, for `ms` */
  | { readonly kind: 'latency'; readonly node: number; readonly latencyMs: number; readonly ms: number }
  /** the proxies cut the nodes off for `ms`: 'blackhole' (hung path) or 'reset' (RST every connection) */
  | { readonly kind: 'cut'; readonly nodes: readonly number[]; readonly how: 'blackhole' | 'reset'; readonly ms: number };

export interface Step {
  /** ms after the workers' common start */
  readonly at: number;
  readonly fault: Fault;
}

export interface Schedule {
  readonly seed: number;
  readonly unsafe: UnsafeName | null;
  readonly workers: number;
  readonly resources: readonly string[];
  /** ms of workload (workers stop taking locks then) */
  readonly durationMs: number;
  readonly nodeTimeout: number;
  readonly restartQuarantine: RestartQuarantine;
  /** a flaw planted in the workers' library (src/redis/planted-flaws.ts), or null: the library as shipped */
  readonly plantedFlaw: 'wakeup-grant' | null;
  /** each lock node's clock rate (1 = real time), applied where faketime is installed (clocks.ts) */
  readonly clockRates: readonly number[];
  /** per worker, one entry per manager it runs: that manager's seeded choices (the seed differs per manager) */
  readonly managers: readonly (readonly OpVariation[])[];
  readonly steps: readonly Step[];
}

const dataLoss = (f: Fault): readonly number[] =>
  f.kind === 'kill' ? [f.node] : f.kind === 'restart-empty' ? f.nodes : f.kind === 'flushall' ? [f.node] : [];

/** When the fault's data loss stops mattering: one quarantine period after the node is back. */
const lossEnd = (s: Step): number => s.at + (s.fault.kind === 'kill' ? s.fault.downMs : 0) + QUARANTINE_MS;

/** ms a step keeps its node (or worker) busy: no second fault on it meanwhile, so faults never trip over each other. */
const busyMs = (f: Fault): number =>
  f.kind === 'kill'
    ? f.downMs + 300
    : f.kind === 'pause-node' || f.kind === 'pause-worker' || f.kind === 'latency' || f.kind === 'cut'
      ? f.ms + 50
      : 300;

/** The process or link a fault uses, as keys, for the busy check. */
function targets(f: Fault): string[] {
  switch (f.kind) {
    case 'kill':
    case 'flushall':
    case 'pause-node':
      return [`node${f.node}`];
    case 'restart-empty':
      return f.nodes.map((n) => `node${n}`);
    case 'pause-worker':
      return [`worker${f.worker}`];
    case 'latency':
      return [`link${f.node}`];
    case 'cut':
      return f.nodes.map((n) => `link${n}`);
  }
}

/**
 * Nodes whose data loss still matters at `at`: lost at or before it, and back for less than a quarantine period.
 * Losses overlap most at some loss's start, so checking at each start checks the whole run.
 */
function nodesLosing(steps: readonly Step[], at: number): Set<number> {
  const lost = new Set<number>();
  for (const s of steps) if (s.at <= at && lossEnd(s) > at) for (const n of dataLoss(s.fault)) lost.add(n);
  return lost;
}

/** Checks a schedule against the rules it was generated under; returns the broken rules' messages (none: ok). */
export function brokenRules(s: Schedule): string[] {
  const broken: string[] = [];
  const lifted = new Set<RuleName>(s.unsafe ? UNSAFE[s.unsafe].lifts : []);
  for (const [i, step] of s.steps.entries()) {
    const end = step.at + busyMs(step.fault) - 50;
    if (!lifted.has('bounded-pauses') && end > s.durationMs) broken.push(`bounded-pauses: step ${i} ends at ${end} ms`);
    if (!lifted.has('majority-keeps-data') && dataLoss(step.fault).length > 0) {
      const lost = nodesLosing(s.steps, step.at);
      if (lost.size > MINORITY) broken.push(`majority-keeps-data: ${lost.size} nodes lose data around step ${i}`);
    }
  }
  if (!lifted.has('quarantine-on') && s.restartQuarantine !== 'auto') broken.push('quarantine-on');
  if (!lifted.has('confirmed-handover') && s.plantedFlaw !== null) broken.push(`confirmed-handover: ${s.plantedFlaw} planted`);
  const offRate = s.clockRates.find((r) => Math.abs(r - 1) > SAFE_DRIFT + 1e-9);
  if (!lifted.has('same-clock-rate') && offRate !== undefined) broken.push(`same-clock-rate: a node runs at ${offRate}x`);
  return broken;
}

/** The schedule of `seed`: a pure function of it (and of `unsafe`). */
export function generateSchedule(seed: number, unsafe: UnsafeName | null = null): Schedule {
  const random = seededRandom(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const lifted = new Set<RuleName>(unsafe ? UNSAFE[unsafe].lifts : []);
  // Rule majority-keeps-data: how many nodes may be losing data at once.
  const maxLoss = lifted.has('majority-keeps-data') ? NODES : MINORITY;

  const workers = int(2, 3);
  // Up to three, so that two-resource locks overlap partly as well as wholly (one draw either way: the faults stay the seed's).
  const resources = Array.from({ length: int(1, 3) }, (_, i) => `r${i}`);
  const durationMs = int(2_500, 4_000);
  const variations = Array.from({ length: workers }, (): OpVariation => ({
    seed: int(1, 2 ** 31 - 1),
    ttlMs: TTL_MS, // rule shared-ttl-ceiling: the same range for every worker
    timeoutMs: [0, 1_500],
    workFactor: [0.02, 0.25],
    longWork: { rate: 0.25, factor: [0.8, 1.6] },
    noExtendRate: 0.3,
    unfairRate: 0.3,
    ...OP_MIX,
  }));

  const steps: Step[] = [];
  const busy = new Map<string, number>(); // target -> busy until
  const times = Array.from({ length: int(2, 6) }, () => int(100, durationMs - 400)).sort((a, b) => a - b);
  for (const at of times) {
    // Rule bounded-pauses: whatever a step starts ends by durationMs.
    const room = durationMs - at - 100;
    const free = (f: Fault): boolean => targets(f).every((t) => (busy.get(t) ?? 0) <= at) && busyMs(f) - 50 <= room;
    const freeNodes = (prefix: string): number[] =>
      Array.from({ length: NODES }, (_, n) => n).filter((n) => (busy.get(`${prefix}${n}`) ?? 0) <= at);
    const shuffled = <T>(xs: T[]): T[] => {
      for (let i = xs.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [xs[i], xs[j]] = [xs[j]!, xs[i]!];
      }
      return xs;
    };
    const duration = (lo: number, hi: number): number => Math.max(lo, Math.min(int(lo, hi), room - 300));
    let fault: Fault | undefined;
    for (let attempt = 0; attempt < 8 && fault === undefined; attempt++) {
      const kind = pick([
        'kill',
        'restart-empty',
        'restart-empty',
        'flushall',
        'pause-node',
        'pause-worker',
        'pause-worker',
        'latency',
        'cut',
      ] as const);
      // Rule majority-keeps-data: nodes already losing data within a quarantine period count against the limit.
      const losing = nodesLosing(steps, at);
      const mayLose = (n: number): boolean => losing.has(n) || losing.size < maxLoss;
      let f: Fault;
      if (kind === 'kill') {
        const node = pick(freeNodes('node'));
        f = { kind, node, downMs: duration(100, 1_500) };
        if (!mayLose(node)) continue;
      } else if (kind === 'restart-empty') {
        const candidates = shuffled(freeNodes('node'));
        const newAllowed = maxLoss - losing.size;
        // With majority-keeps-data lifted, lean into what it forbade: half the time, every node at once.
        const want = maxLoss > MINORITY && random() < 0.5 ? NODES : int(1, maxLoss);
        const nodes: number[] = [];
        for (const n of candidates) {
          if (nodes.length >= want) break;
          if (losing.has(n) || nodes.filter((x) => !losing.has(x)).length < newAllowed) nodes.push(n);
        }
        if (nodes.length === 0) continue;
        f = { kind, nodes: nodes.sort() };
      } else if (kind === 'flushall') {
        const node = pick(freeNodes('node'));
        f = { kind, node };
        if (!mayLose(node)) continue;
      } else if (kind === 'pause-node') {
        f = { kind, node: pick(freeNodes('node')), ms: duration(100, 1_500) };
      } else if (kind === 'pause-worker') {
        // Often past the lease: the paused holder's late write must be refused by the fence.
        f = { kind, worker: int(0, workers - 1), ms: duration(200, 2 * TTL_MS[1]) };
      } else if (kind === 'latency') {
        f = { kind, node: pick(freeNodes('link')), latencyMs: int(5, 150), ms: duration(200, 1_500) };
      } else {
        const nodes = shuffled(freeNodes('link')).slice(0, int(1, NODES));
        f = { kind, nodes: nodes.sort(), how: pick(['blackhole', 'reset'] as const), ms: duration(100, 1_200) };
      }
      if (targets(f).some((t) => t === 'nodeundefined' || t === 'linkundefined') || !free(f)) continue;
      fault = f;
    }
    if (fault === undefined) continue;
    for (const t of targets(fault)) busy.set(t, at + busyMs(fault));
    steps.push({ at, fault });
  }

  return {
    seed,
    unsafe,
    workers,
    resources,
    durationMs,
    nodeTimeout: 100,
    restartQuarantine: lifted.has('quarantine-on') ? false : 'auto',
    plantedFlaw: lifted.has('confirmed-handover') ? 'wakeup-grant' : null,
    // Rule same-clock-rate: within SAFE_DRIFT of real time, unless lifted.
    clockRates: drawClockRates(seed, NODES, lifted.has('same-clock-rate')),
    managers: drawManagers(seed, variations),
    steps,
  };
}

/** One line per step, for a report or a failure message. */
export function describeStep(s: Step): string {
  const f = s.fault;
  const at = `t+${s.at}ms`.padEnd(9);
  switch (f.kind) {
    case 'kill':
      return `${at} SIGKILL node ${f.node}, back empty after ${f.downMs} ms`;
    case 'restart-empty':
      return `${at} restart empty node${f.nodes.length > 1 ? 's' : ''} ${f.nodes.join(', ')}`;
    case 'flushall':
      return `${at} FLUSHALL node ${f.node}`;
    case 'pause-node':
      return `${at} SIGSTOP node ${f.node} for ${f.ms} ms`;
    case 'pause-worker':
      return `${at} SIGSTOP worker w${f.worker + 1} for ${f.ms} ms`;
    case 'latency':
      return `${at} +${f.latencyMs} ms each way to node ${f.node} for ${f.ms} ms`;
    case 'cut':
      return `${at} ${f.how} the path to node${f.nodes.length > 1 ? 's' : ''} ${f.nodes.join(', ')} for ${f.ms} ms`;
  }
}

export function describeSchedule(s: Schedule): string {
  const head =
    `seed ${s.seed}${s.unsafe ? ` (--unsafe ${s.unsafe})` : ''}: ${NODES} nodes, ${s.workers} workers ` +
    `(${s.managers.map((m) => m.length).join(', ')} managers), ` +
    `resources ${s.resources.join(', ')}, ${s.durationMs} ms, restartQuarantine ${String(s.restartQuarantine)}, ` +
    `ttl ${TTL_MS[0]}-${TTL_MS[1]} ms, clock rates ${s.clockRates.join(', ')}` +
    (s.plantedFlaw ? `, planted flaw ${s.plantedFlaw}` : '');
  return [head, ...s.steps.map((st, i) => `  ${String(i).padStart(2)}. ${describeStep(st)}`)].join('\n');
}
