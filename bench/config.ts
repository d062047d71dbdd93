// Every knob of the benchmark in one place: the same values for every library.
import type { Mode, ProfileName, WorkloadId, WorkloadSettings } from './types.js';

/** Lease of every acquire in W1-W4, all libraries. */
export const TTL = 10_000;
/** Longest any acquire waits before giving up (libraries that count attempts get enough to cover it). */
export const ACQUIRE_TIMEOUT = 10_000;
/** The retry delay while waiting, for every library that has one. */
export const RETRY_DELAY = 10;
/** Attempts for libraries that count attempts instead of time: >= ACQUIRE_TIMEOUT / RETRY_DELAY. */
export const RETRY_COUNT = Math.ceil(ACQUIRE_TIMEOUT / RETRY_DELAY);
/** fencelock's per-node request timeout (its default). */
export const NODE_TIMEOUT = 200;
export const DRIFT_FACTOR = 0.01;

export const NODE_COUNT = 5;
/** The modes W1-W5 run in (--modes). The design table runs in its own, `redlock3`, whatever --modes says. */
export const MODES: readonly Mode[] = ['single', 'redlock5', 'etcd3', 'zk3'];
export const MODE_LABEL: Record<Mode, string> = {
  single: 'single node',
  redlock5: '5 nodes (Redlock)',
  etcd3: 'etcd, 3 members',
  zk3: 'ZooKeeper, 3 servers',
  redlock3: '3 nodes (Redlock)',
};
/** etcd members in the etcd3 mode */
export const ETCD_MEMBERS = 3;
/** ZooKeeper servers in the zk3 mode */
export const ZOOKEEPER_SERVERS = 3;
/**
 * zoo.cfg of the zk3 mode's servers: every write fsynced before it is acknowledged, ZooKeeper's default (the
 * test ensembles turn it off), as etcd's members do: otherwise the two would not be measured alike.
 */
export const ZOOKEEPER_CONFIG = { forceSync: 'yes' } as const;
/** The workloads of the cells, in run order (external ones, such as burst, come after: external.ts). */
export const WORKLOADS: readonly WorkloadId[] = ['W1', 'W2', 'W3', 'W4', 'W5', 'design'];
/** The design table compares these three (the choice): fencelock, node-redlock v5 and the floor. */
export const DESIGN_LIBRARIES: readonly string[] = ['fencelock/ioredis', 'redlock@5-beta', 'raw-floor'];
/**
 * The design's own figures, from a 3-node cluster of 4-vCPU machines (clients on machines of their own): shown
 * beside this machine's, which are not comparable in absolute terms (see the note under the table).
 */
export const DESIGN_FIGURES: ReadonlyArray<{ clients: number; opsPerSec: number; meanMs: number }> = [
  { clients: 10, opsPerSec: 12_345, meanMs: 2.1 },
  { clients: 50, opsPerSec: 28_901, meanMs: 5.8 },
  { clients: 100, opsPerSec: 31_456, meanMs: 9.3 },
];

export interface Profile {
  /**
   * How many times each cell a target judges runs (bench/repeats.ts), interleaved with the cells it is judged
   * against; the report gives the median run. The other cells run once.
   */
  repeats: number;
  /**
   * sequential acquire+release pairs per process before any measurement (loads scripts, warms the JIT); the
   * issue's method: 200, then the timed ones. W1 times these too, as the cold path (first pair, first 100).
   */
  warmupPairs: number;
  w1: WorkloadSettings['W1'];
  w2: WorkloadSettings['W2'];
  /** drainMs: how long callers still waiting at the end of the window are followed (full: until their acquire times out) */
  w3: WorkloadSettings['W3'];
  w4: WorkloadSettings['W4'];
  w5: WorkloadSettings['W5'];
  design: NonNullable<WorkloadSettings['design']>;
  /** a cell process still running after this is killed and the cell marked failed */
  cellTimeoutMs: Record<WorkloadId, number>;
}

const DRAIN_MS = ACQUIRE_TIMEOUT + 2_000; // callers still waiting at the end of W3/W4: followed until their acquire times out

export const PROFILES: Record<ProfileName, Profile> = {
  full: {
    repeats: 3,
    warmupPairs: 200,
    w1: { ops: 2_000 },
    w2: { callers: 64, durationMs: 3_000 },
    w3: { callers: 16, holdMs: 1, durationMs: 4_000, drainMs: DRAIN_MS },
    w4: { processes: 4, callersPerProcess: 4, holdMs: 1, durationMs: 4_000, drainMs: DRAIN_MS },
    // ttl 3 s, held 5 s: every library's auto-extension fires at least once during the hold
    w5: { locks: 10_000, ttl: 3_000, holdMs: 5_000, concurrency: 256, heapSamples: 5 },
    design: { nodes: 3, clients: [10, 50, 100], durationMs: 3_000 },
    cellTimeoutMs: { W1: 60_000, W2: 40_000, W3: 40_000 + DRAIN_MS, W4: 60_000 + DRAIN_MS, W5: 120_000, design: 40_000 },
  },
  quick: {
    repeats: 1,
    warmupPairs: 3,
    w1: { ops: 30 },
    w2: { callers: 4, durationMs: 300 }, // W2 does not run on etcd or ZooKeeper in the smoke plan (smoke.ts)
    // A contended hand-over on etcd or ZooKeeper on a loaded CI machine took longer than 150 ms (0 ops): 500 ms.
    w3: { callers: 4, holdMs: 1, durationMs: 500, drainMs: 1_000 },
    w4: { processes: 2, callersPerProcess: 2, holdMs: 1, durationMs: 500, drainMs: 1_000 },
    // ttl over 1.25 s: redlock-universal extends non-stop below; one heap sample (a smoke run checks it is measured)
    w5: { locks: 50, ttl: 2_000, holdMs: 100, concurrency: 50, heapSamples: 1 },
    design: { nodes: 3, clients: [2, 4], durationMs: 200 },
    cellTimeoutMs: { W1: 30_000, W2: 30_000, W3: 30_000, W4: 40_000, W5: 30_000, design: 30_000 },
  },
};

/** Settings common to every library, as recorded in the results. */
export function commonSettings(): Record<string, unknown> {
  return {
    ttlMs: TTL,
    acquireTimeoutMs: ACQUIRE_TIMEOUT,
    retryDelayMs: RETRY_DELAY,
    retryCountWhereCounted: RETRY_COUNT,
    driftFactor: DRIFT_FACTOR,
    nodes: NODE_COUNT,
    modes: MODE_LABEL,
    zookeeperConfig: ZOOKEEPER_CONFIG,
  };
}
