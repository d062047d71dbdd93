// Types shared by the orchestrator (run.ts), the cell processes (cell.ts) and the reports.

/**
 * node 0 alone, all five Redis nodes, a local 3-member etcd cluster or a local 3-server ZooKeeper ensemble (the
 * last two: fencelock only); `redlock3`, nodes 0-2, is the design table's mode only.
 */
export type Mode = 'single' | 'redlock5' | 'etcd3' | 'zk3' | 'redlock3';
/** W1-W5, and `design`: the design's throughput table (3 nodes, N clients each on its own key). */
export type WorkloadId = 'W1' | 'W2' | 'W3' | 'W4' | 'W5' | 'design';
export type ProfileName = 'full' | 'quick';

/** What every library adapter offers a workload. A handle is whatever the library needs to release. */
export interface LockLibrary<H = unknown> {
  readonly name: string;
  /** connect to the mode's nodes (node 0 alone, all five, the etcd cluster's or the ZooKeeper ensemble's URL) and build the library's lock objects */
  setup(urls: readonly string[], mode: Mode): Promise<void>;
  /** wait until `key` is held (the library's own retrying); rejects if its retry budget runs out */
  acquire(key: string): Promise<H>;
  release(handle: H): Promise<void>;
  /** hold `key` with the library's auto-extension until `until` resolves; call `onHeld` once held; resolves after release */
  holdWithAutoExtend?(key: string, until: Promise<void>, onHeld: () => void): Promise<void>;
  close(): Promise<void>;
}

/** What an adapter needs to know beyond the common settings in config.ts. */
export interface LibraryContext {
  /** lease of the W5 auto-extended holds (shorter than TTL, so that extensions happen) */
  w5Ttl: number;
  /** in a W4 worker process: its index among the cell's worker processes, and how many there are */
  w4?: { index: number; processes: number };
}

/** An adapter module: bench/libraries/<name>.ts. */
export interface LibraryModule {
  /** the settings the adapter configures the library with, recorded in the results */
  settings: Record<string, unknown>;
  create(ctx: LibraryContext): LockLibrary;
}

/** Which cell: a (workload, library, mode), and for the design table its client count. */
export interface CellId {
  workload: WorkloadId;
  library: string;
  mode: Mode;
  /** design cells only: the concurrent clients, each on its own key */
  clients?: number;
}

/** One cell, as handed to a cell process (full profile: a fresh process per cell; see plan.ts). */
export interface CellSpec extends CellId {
  /** the nodes the library uses: node 0 alone (single), all five (redlock5), one etcd:// URL (etcd3) or one zk:// URL (zk3) */
  urls: string[];
  /** every node of the run: commands are counted over all of them */
  statsUrls: string[];
  profile: ProfileName;
}

export interface CommandCount {
  /** calls summed over all nodes (the benchmark's own INFO calls removed) */
  total: number;
  perOp: number | null;
  byCommand: Record<string, number>;
  /** CPU time of the redis-server processes (INFO cpu: used_cpu_user + used_cpu_sys, all nodes), µs */
  redisCpuUs?: number;
  redisCpuPerOpUs?: number | null;
}

export interface CpuCount {
  userUs: number;
  systemUs: number;
  perOpUs: number | null;
}

/** Per-caller acquisition counts under contention, and how even they are. */
export interface Fairness {
  callers: number;
  perCaller: number[];
  min: number;
  max: number;
  /** max / min; null when some caller never acquired (min = 0) */
  maxMinRatio: number | null;
  /** Jain's index (sum x)^2 / (n * sum x^2): 1 = perfectly even, 1/n = one caller got everything */
  jain: number | null;
}

/** What a workload measured. `metrics` keys are listed per workload in bench/workloads/*.ts. */
export interface WorkloadResult {
  ops: number;
  metrics: Record<string, number | null>;
  commands: CommandCount;
  cpu: CpuCount;
  fairness?: Fairness;
  /** errors the library raised during the measurement (e.g. acquire timeouts), with a sample message */
  errors: number;
  errorSample?: string;
  notes?: string[];
}

export type CellStatus = 'ok' | 'failed' | 'n/a';

export interface CellResult extends Partial<WorkloadResult>, CellId {
  status: CellStatus;
  /** why it failed, or why it does not apply (n/a) */
  error?: string;
  /** wall time of the cell: spawn to exit of its process (a --quick batch: the cell's own part of it) */
  wallMs: number;
  /** a cell that ran several times (bench/repeats.ts): its headline metric in every run, in run order; this is the median run */
  repeats?: { metric: string; values: Array<number | null> };
}

/** The workload parameters of a run (its profile's, see config.ts). */
export interface WorkloadSettings {
  profile: ProfileName;
  /** sequential acquire+release pairs every cell process (and W4 worker) runs before it measures; W1 times them (cold) */
  warmupPairs?: number;
  /** runs of each cell a target judges (bench/repeats.ts; older runs: 1) */
  repeats?: number;
  W1: { ops: number; warmup?: number };
  W2: { callers: number; durationMs: number };
  W3: { callers: number; holdMs: number; durationMs: number; drainMs: number };
  W4: { processes: number; callersPerProcess: number; holdMs: number; durationMs: number; drainMs: number };
  /** heapSamples: full-GC heap samples 250 ms apart after the hold, the lowest counts (older runs: 5) */
  W5: { locks: number; ttl: number; holdMs: number; concurrency: number; heapSamples?: number };
  /** the design's table: `nodes` Redis nodes, each client count a cell; every client loops on its own key for durationMs */
  design?: { nodes: number; clients: number[]; durationMs: number };
}

/** A workload run by a script of its own after the cells (bench/external.ts), e.g. the burst workload. */
export interface ExternalResult {
  id: string;
  title: string;
  command: string;
  status: CellStatus;
  /** its stdout: markdown, put on the page as it is (absent for a workload that writes its own page) */
  markdown?: string;
  error?: string;
  wallMs: number;
}

export interface RunReport {
  date: string;
  startedAt: string;
  finishedAt: string;
  command: string;
  profile: ProfileName;
  machine: {
    platform: string;
    arch: string;
    cpus: number;
    cpuModel: string;
    memoryGiB: number;
    node: string;
    redis: string;
  };
  versions: Record<string, string>;
  fencelockCommit: string;
  settings: {
    common: Record<string, unknown>;
    workloads: WorkloadSettings;
    libraries: Record<string, Record<string, unknown>>;
  };
  cells: CellResult[];
  /** workloads run by scripts of their own (bench/external.ts); absent in older runs */
  external?: ExternalResult[];
  totalMs: number;
}
