// Random fault schedules for the backends that decide as one: a 3-member etcd cluster (Raft) or a 3-server
// ZooKeeper ensemble (Zab). Like schedule.ts (Redis), a schedule is a pure function of its seed (and of the
// backend and --unsafe), and every rule the generator keeps is named, with where it comes from.
// The leases differ from Redis: an etcd lease is whole seconds with a server minimum, a ZooKeeper lease is the
// client's session. The ranges below are chosen so that work longer than the lease and pauses past the lease
// really happen on each backend (see LEASES).
import { seededRandom } from '../../src/cli/demo/chaos.js';
import type { OpVariation } from '../support/faults/index.js';
import { drawManagers, OP_MIX } from './schedule.js';

export type ConsensusBackend = 'etcd' | 'zookeeper';
export const CONSENSUS_BACKENDS: readonly ConsensusBackend[] = ['etcd', 'zookeeper'];
export const isConsensusBackend = (s: string): s is ConsensusBackend => (CONSENSUS_BACKENDS as readonly string[]).includes(s);

/** Three members: a quorum is two, a minority one. */
export const MEMBERS = 3;
export const MEMBER_MINORITY = Math.floor((MEMBERS - 1) / 2);

/**
 * etcd's election timing for the chaos cluster: heartbeat 100 ms, election timeout 600 ms. etcd's smallest lease
 * is ceil(1.5 x election ticks x heartbeat) = ceil(0.9 s) = 1 s (2 s with the defaults, docs/etcd.md), so a 1-2.5 s
 * ttl is really a 1-3 s lease on the server, and a faster election keeps a killed leader's gap short.
 */
export const ETCD_ARGS: readonly string[] = ['--heartbeat-interval', '100', '--election-timeout', '600'];

/** Per backend, what the workers' leases are and what makes them end. */
export const LEASES = {
  etcd: {
    // Each lock is its own lease of the lock's ttl, rounded up to whole seconds (docs/etcd.md). Work of 1.1-2x the
    // ttl without auto-extension outlives a lease of ceil(ttl) s for most draws (ttl 1000 ms, work 1100-2000 ms,
    // 1 s lease): the server ends the lease mid-work and the late write must be refused by the fence.
    ttlMs: [1_000, 2_500] as const,
    longWorkFactor: [1.1, 2.0] as const,
    /** the manager's ttl (each holding passes its own): the managers' session-less leases need none longer */
    sessionMs: undefined,
    /** a worker pause of up to 4 s outlasts the longest lease (3 s) plus etcd's expiry sweep (every 0.5 s) */
    pauseWorkerMs: [300, 4_000] as const,
  },
  zookeeper: {
    // Every lock of a manager hangs on its one session, whose timeout is the manager's ttl (docs/zookeeper.md):
    // a holding's own ttl only shortens its validity (capped by the session). Work longer than a holding's ttl
    // therefore does not lose the lock on the server (the client's pings keep the session); only a pause of the
    // whole worker process past its session's timeout does, so pauses reach 2x the longest session.
    // From the 400 ms session minimum (2 ticks). These draws found that LockManager refused any ttl under
    // 600 ms here (the Redis rule nodeTimeout < ttl / 3); fixed, and kept by test/zookeeper/backend.test.ts.
    ttlMs: [400, 2_000] as const,
    longWorkFactor: [1.1, 2.0] as const,
    /** the session timeout of a worker's managers (each its own session), drawn per worker within this range; 5-10 ticks of the ensemble's 200 ms tickTime */
    sessionMs: [1_000, 2_000] as const,
    pauseWorkerMs: [300, 4_500] as const,
  },
} as const;

/** Every rule the consensus generator keeps, with where it comes from. The code below names the rule it enforces. */
export const CONSENSUS_RULES = {
  'majority-keeps-data':
    'at most one of the 3 members is empty or rejoining at once, and nothing else is done to a member while it is ' +
    '(Raft and Zab keep committed data while a majority keeps its log; an empty member still catching up is not ' +
    'part of that majority, docs/zookeeper.md: "as long as a majority of servers keeps its data"; etcd re-adds an ' +
    'empty member through a running majority, etcd-cluster.ts restartEmpty)',
  'kills-keep-data': 'a killed member comes back with its data dir (SIGKILL loses nothing etcd or ZooKeeper acknowledged)',
  'bounded-pauses':
    'every member or worker pause, downtime and network fault ends before the workload does (a worker may be paused ' +
    'past its lease or session: that is the case fencing exists for, and the store must refuse its late write)',
  'same-clock-rate': 'no clock faults: leases and sessions are timed by each process on its own monotonic clock',
  'keys-left-alone': "nothing deletes fencelock's keys or znodes but the servers themselves (lease or session ends)",
} as const;
export type ConsensusRuleName = keyof typeof CONSENSUS_RULES;

/** What each --unsafe name lifts on a consensus backend. */
export const CONSENSUS_UNSAFE = {
  'majority-loss': {
    lifts: ['majority-keeps-data'] as ConsensusRuleName[],
    what:
      'the nemesis may restart a majority empty at once. ZooKeeper: 2 or 3 servers wiped and restarted together; ' +
      'etcd cannot re-add members without a running majority, so there the whole cluster is wiped and started as a ' +
      'new one on the same ports. Both contracts say committed data can then be lost: the checker should find it',
  },
} as const;
export type ConsensusUnsafeName = keyof typeof CONSENSUS_UNSAFE;
export const isConsensusUnsafeName = (s: string): s is ConsensusUnsafeName => Object.hasOwn(CONSENSUS_UNSAFE, s);

export type ConsensusFault =
  /** SIGKILL; the member stays down `downMs`, then comes back with its data */
  | { readonly kind: 'kill'; readonly member: number; readonly downMs: number }
  /** SIGKILL whoever leads when the step runs (resolved then), back with its data after `downMs` */
  | { readonly kind: 'kill-leader'; readonly downMs: number }
  /**
   * kill, wipe and bring back empty, every member listed (together). One member: etcd removes and re-adds it, ZooKeeper
   * restarts it with its myid; either way it catches up from the others. More than one only with --unsafe majority-loss.
   */
  | { readonly kind: 'restart-empty'; readonly members: readonly number[] }
  /** SIGSTOP, SIGCONT after `ms` */
  | { readonly kind: 'pause-member'; readonly member: number; readonly ms: number }
  /** SIGSTOP a worker process (it may hold a lock), SIGCONT after `ms` */
  | { readonly kind: 'pause-worker'; readonly worker: number; readonly ms: number }
  /** the proxy between the clients and the member delays each direction by `latencyMs`, for `ms` */
  | { readonly kind: 'latency'; readonly member: number; readonly latencyMs: number; readonly ms: number }
  /** the proxies cut the clients off the members for `ms`: 'blackhole' (hung path) or 'reset' (RST every connection) */
  | { readonly kind: 'cut'; readonly members: readonly number[]; readonly how: 'blackhole' | 'reset'; readonly ms: number };

export interface ConsensusStep {
  /** ms after the workers' common start */
  readonly at: number;
  readonly fault: ConsensusFault;
}

export interface ConsensusSchedule {
  readonly backend: ConsensusBackend;
  readonly seed: number;
  readonly unsafe: ConsensusUnsafeName | null;
  readonly workers: number;
  readonly resources: readonly string[];
  /** ms of workload (workers stop taking locks then) */
  readonly durationMs: number;
  /** per worker, its managers' ttl: ZooKeeper's session timeout (each manager its own session); etcd's default lease (each holding passes its own) */
  readonly managerTtls: readonly number[];
  /** per worker, one entry per manager it runs: that manager's seeded choices (the seed differs per manager) */
  readonly managers: readonly (readonly OpVariation[])[];
  readonly steps: readonly ConsensusStep[];
}

/**
 * ms a restart-empty keeps the whole cluster to itself (rule majority-keeps-data): the process start, etcd's remove
 * and re-add or ZooKeeper's JVM start, and the catch-up. At run time the step also waits until the member serves
 * again, and later member steps wait for it (consensus-run.ts), so a slow machine stretches it rather than breaks it.
 */
export const RESTART_EMPTY_MS = { etcd: 2_500, zookeeper: 4_000 } as const;
/** after a killed member is started again, how long until it has (probably) rejoined: a JVM starts slower */
const REJOIN_MS = { etcd: 500, zookeeper: 2_000 } as const;

const ALL_MEMBERS = Array.from({ length: MEMBERS }, (_, i) => i);

/** ms a step keeps its member(s), link(s) or worker busy: no second fault on them meanwhile. */
function busyMs(backend: ConsensusBackend, f: ConsensusFault): number {
  switch (f.kind) {
    case 'kill':
    case 'kill-leader':
      return f.downMs + REJOIN_MS[backend];
    case 'restart-empty':
      return RESTART_EMPTY_MS[backend];
    default:
      return f.ms + 50;
  }
}

/** The processes or links a step uses, as keys. Whoever leads is unknown until the step runs: a leader kill takes every member. */
function targets(f: ConsensusFault): string[] {
  switch (f.kind) {
    case 'kill':
    case 'pause-member':
      return [`member${f.member}`];
    // Rule majority-keeps-data: an empty restart has the members to itself (nothing else happens to any member meanwhile).
    case 'restart-empty':
    case 'kill-leader':
      return ALL_MEMBERS.map((m) => `member${m}`);
    case 'pause-worker':
      return [`worker${f.worker}`];
    case 'latency':
      return [`link${f.member}`];
    case 'cut':
      return f.members.map((m) => `link${m}`);
  }
}

/** Checks a schedule against the rules it was generated under; returns the broken rules' messages (none: ok). */
export function brokenConsensusRules(s: ConsensusSchedule): string[] {
  const broken: string[] = [];
  const lifted = new Set<ConsensusRuleName>(s.unsafe ? CONSENSUS_UNSAFE[s.unsafe].lifts : []);
  for (const [i, step] of s.steps.entries()) {
    const end = step.at + busyMs(s.backend, step.fault) - 50;
    if (!lifted.has('bounded-pauses') && end > s.durationMs) broken.push(`bounded-pauses: step ${i} ends at ${end} ms`);
    if (!lifted.has('majority-keeps-data') && step.fault.kind === 'restart-empty') {
      if (step.fault.members.length > MEMBER_MINORITY)
        broken.push(`majority-keeps-data: step ${i} restarts ${step.fault.members.length} members empty`);
      // Nothing else on any member while it is empty or rejoining.
      const until = step.at + RESTART_EMPTY_MS[s.backend];
      for (const [j, other] of s.steps.entries()) {
        const memberStep = targets(other.fault).some((t) => t.startsWith('member'));
        const otherEnd = other.at + busyMs(s.backend, other.fault);
        if (j !== i && memberStep && other.at < until && otherEnd > step.at)
          broken.push(`majority-keeps-data: step ${j} touches a member while step ${i} restarts one empty`);
      }
    }
  }
  return broken;
}

/** The schedule of `seed` on `backend`: a pure function of them (and of `unsafe`). */
export function generateConsensusSchedule(
  seed: number,
  backend: ConsensusBackend,
  unsafe: ConsensusUnsafeName | null = null,
): ConsensusSchedule {
  const random = seededRandom(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const lifted = new Set<ConsensusRuleName>(unsafe ? CONSENSUS_UNSAFE[unsafe].lifts : []);
  const lease = LEASES[backend];

  const workers = int(2, 3);
  const resources = Array.from({ length: int(1, 3) }, (_, i) => `r${i}`);
  // Longer than Redis's 2.5-4 s: leases of seconds, and a member restart (a JVM for ZooKeeper) must fit in.
  const durationMs = int(5_000, 7_000);
  const managerTtls = Array.from({ length: workers }, () => (lease.sessionMs ? int(lease.sessionMs[0], lease.sessionMs[1]) : 1_000));
  const variations = Array.from({ length: workers }, (): OpVariation => ({
    seed: int(1, 2 ** 31 - 1),
    ttlMs: lease.ttlMs,
    timeoutMs: [0, 2_000],
    workFactor: [0.02, 0.25],
    longWork: { rate: 0.25, factor: lease.longWorkFactor },
    noExtendRate: 0.3,
    unfairRate: 0.3,
    ...OP_MIX,
  }));

  const steps: ConsensusStep[] = [];
  const busy = new Map<string, number>(); // target -> busy until
  const times = Array.from({ length: int(2, 6) }, () => int(200, durationMs - 600)).sort((a, b) => a - b);
  for (const at of times) {
    // Rule bounded-pauses: whatever a step starts ends by durationMs.
    const room = durationMs - at - 100;
    const free = (f: ConsensusFault): boolean => targets(f).every((t) => (busy.get(t) ?? 0) <= at) && busyMs(backend, f) - 50 <= room;
    const freeOf = (prefix: string): number[] => ALL_MEMBERS.filter((m) => (busy.get(`${prefix}${m}`) ?? 0) <= at);
    const shuffled = <T>(xs: T[]): T[] => {
      for (let i = xs.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [xs[i], xs[j]] = [xs[j]!, xs[i]!];
      }
      return xs;
    };
    const duration = (lo: number, hi: number): number => Math.max(lo, Math.min(int(lo, hi), room - 300));
    let fault: ConsensusFault | undefined;
    for (let attempt = 0; attempt < 8 && fault === undefined; attempt++) {
      // With majority-keeps-data lifted, lean into what it forbade: empty restarts drawn three times as often.
      const kind = pick([
        'kill',
        'kill-leader',
        'restart-empty',
        ...(lifted.has('majority-keeps-data') ? (['restart-empty', 'restart-empty'] as const) : []),
        'pause-member',
        'pause-worker',
        'pause-worker',
        'latency',
        'cut',
      ] as const);
      let f: ConsensusFault;
      if (kind === 'kill') {
        // Rule kills-keep-data: back with its data dir.
        f = { kind, member: pick(freeOf('member')), downMs: duration(200, 2_500) };
      } else if (kind === 'kill-leader') {
        f = { kind, downMs: duration(200, 2_500) };
      } else if (kind === 'restart-empty') {
        // Rule majority-keeps-data: one member; lifted, a majority (etcd: all of them, see CONSENSUS_UNSAFE).
        const members = lifted.has('majority-keeps-data')
          ? backend === 'etcd'
            ? [...ALL_MEMBERS]
            : // ZooKeeper: two wiped servers still elect the third, which kept its data (the highest zxid wins), so
              // half the time all three.
              shuffled([...ALL_MEMBERS]).slice(0, random() < 0.5 ? MEMBERS : MEMBER_MINORITY + 1)
          : [int(0, MEMBERS - 1)];
        f = { kind, members: members.sort() };
      } else if (kind === 'pause-member') {
        f = { kind, member: pick(freeOf('member')), ms: duration(200, 2_000) };
      } else if (kind === 'pause-worker') {
        // Often past the lease (or session): the paused holder's late write must be refused by the fence.
        f = { kind, worker: int(0, workers - 1), ms: duration(lease.pauseWorkerMs[0], lease.pauseWorkerMs[1]) };
      } else if (kind === 'latency') {
        f = { kind, member: pick(freeOf('link')), latencyMs: int(5, 150), ms: duration(200, 2_000) };
      } else {
        const members = shuffled(freeOf('link')).slice(0, int(1, MEMBERS));
        f = { kind, members: members.sort(), how: pick(['blackhole', 'reset'] as const), ms: duration(200, 2_000) };
      }
      if (targets(f).some((t) => t.endsWith('undefined')) || (f.kind === 'cut' && f.members.length === 0) || !free(f)) continue;
      fault = f;
    }
    if (fault === undefined) continue;
    for (const t of targets(fault)) busy.set(t, at + busyMs(backend, fault));
    steps.push({ at, fault });
  }

  return { backend, seed, unsafe, workers, resources, durationMs, managerTtls, managers: drawManagers(seed, variations), steps };
}

/** One line per step, for a report or a failure message. */
export function describeConsensusStep(s: ConsensusStep, backend: ConsensusBackend): string {
  const f = s.fault;
  const at = `t+${s.at}ms`.padEnd(9);
  const member = backend === 'etcd' ? 'member' : 'server';
  switch (f.kind) {
    case 'kill':
      return `${at} SIGKILL ${member} ${f.member}, back with its data after ${f.downMs} ms`;
    case 'kill-leader':
      return `${at} SIGKILL the leader, back with its data after ${f.downMs} ms`;
    case 'restart-empty':
      return backend === 'etcd' && f.members.length === MEMBERS
        ? `${at} wipe every member and start the cluster anew (members ${f.members.join(', ')})`
        : `${at} restart empty ${member}${f.members.length > 1 ? 's' : ''} ${f.members.join(', ')}`;
    case 'pause-member':
      return `${at} SIGSTOP ${member} ${f.member} for ${f.ms} ms`;
    case 'pause-worker':
      return `${at} SIGSTOP worker w${f.worker + 1} for ${f.ms} ms`;
    case 'latency':
      return `${at} +${f.latencyMs} ms each way to ${member} ${f.member} for ${f.ms} ms`;
    case 'cut':
      return `${at} ${f.how} the path to ${member}${f.members.length > 1 ? 's' : ''} ${f.members.join(', ')} for ${f.ms} ms`;
  }
}

export function describeConsensusSchedule(s: ConsensusSchedule): string {
  const lease = LEASES[s.backend];
  const what = s.backend === 'etcd' ? `${MEMBERS} etcd members` : `${MEMBERS} zookeeper servers`;
  const leases =
    s.backend === 'etcd'
      ? `ttl ${lease.ttlMs[0]}-${lease.ttlMs[1]} ms (whole-second leases)`
      : `sessions ${s.managerTtls.join(', ')} ms, ttl ${lease.ttlMs[0]}-${lease.ttlMs[1]} ms (capped by the session)`;
  const head =
    `seed ${s.seed} --backend ${s.backend}${s.unsafe ? ` (--unsafe ${s.unsafe})` : ''}: ${what}, ${s.workers} workers ` +
    `(${s.managers.map((m) => m.length).join(', ')} managers), ` +
    `resources ${s.resources.join(', ')}, ${s.durationMs} ms, ${leases}`;
  return [head, ...s.steps.map((st, i) => `  ${String(i).padStart(2)}. ${describeConsensusStep(st, s.backend)}`)].join('\n');
}
