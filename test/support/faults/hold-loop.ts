// The workload every fault worker runs: lock a random resource, read the
// fenced store, work a little, write value + 1 with the lock's fence.
import type { WithLockOptions } from '../../../src/index.js';
import { seededRandom } from '../../../src/cli/demo/chaos.js';
import type { FencedStore } from './fenced-store.js';
import type { Recorder } from './recorder.js';

export interface HoldStats {
  holds: number;
  accepted: number;
  rejected: number;
  lost: number;
  timeouts: number;
  errors: number;
}

export const newHoldStats = (): HoldStats => ({ holds: 0, accepted: 0, rejected: 0, lost: 0, timeouts: 0, errors: 0 });

/** One holding's choices: which resource, how long the critical section works, with which options. */
export interface HoldOp {
  readonly resource: string;
  readonly workMs: number;
  readonly lockOptions?: WithLockOptions;
}

/**
 * Operations drawn at random per holding from a seeded PRNG (JSON-safe: it travels in a WorkloadConfig), so a
 * worker's sequence of choices is a function of its seed. Ranges are [min, max], inclusive, in ms.
 */
export interface OpVariation {
  readonly seed: number;
  readonly ttlMs: readonly [number, number];
  /** acquire timeout (0 = one attempt); still capped by the time left */
  readonly timeoutMs: readonly [number, number];
  /** work = ttl x a factor drawn in this range (below 1: shorter than the lease) ... */
  readonly workFactor: readonly [number, number];
  /** ... or, for this share of holdings, in this one (above 1: longer than the lease) */
  readonly longWork?: { readonly rate: number; readonly factor: readonly [number, number] };
  /** share of holdings with autoExtend off (withLock's default is on): work longer than the ttl then loses the lock */
  readonly noExtendRate: number;
  /** share of holdings with fair: false */
  readonly unfairRate: number;
}

/** The nextOp of a HoldLoop drawing each holding's resource, ttl, timeout, work and flags from `v`. */
export function variedOps(v: OpVariation, resources: readonly string[]): () => HoldOp {
  const random = seededRandom(v.seed);
  const between = ([lo, hi]: readonly [number, number]): number => lo + random() * (hi - lo);
  return () => {
    const resource = resources[Math.floor(random() * resources.length)]!;
    const ttl = Math.round(between(v.ttlMs));
    const timeout = Math.round(between(v.timeoutMs));
    const long = v.longWork !== undefined && random() < v.longWork.rate;
    const workMs = Math.round(ttl * between(long ? v.longWork!.factor : v.workFactor));
    const autoExtend = random() >= v.noExtendRate;
    const fair = random() >= v.unfairRate;
    return { resource, workMs, lockOptions: { ttl, timeout, autoExtend, fair } };
  };
}

export interface HoldLoop {
  readonly recorder: Recorder;
  readonly store: FencedStore;
  readonly resources: readonly string[];
  /** performance.now() at which to stop */
  readonly deadline: number;
  readonly maxHolds: number;
  readonly workMs: number;
  readonly lockOptions?: WithLockOptions;
  /** picks each holding (e.g. variedOps); default: a random resource (Math.random) with `workMs` and `lockOptions` */
  readonly nextOp?: () => HoldOp;
  readonly stats: HoldStats;
  /** called as each critical section starts */
  readonly onHolding?: () => void;
  /** called for errors other than a lost lock or an acquire timeout (at most the first 20) */
  readonly onError: (error: unknown) => void;
}

const MAX_ERROR_MESSAGES = 20;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown): unknown => (e as { code?: unknown } | null)?.code;

export async function runHoldLoop(o: HoldLoop): Promise<void> {
  const { stats, store } = o;
  for (let i = 0; i < o.maxHolds && performance.now() < o.deadline; i++) {
    const { resource, workMs, lockOptions } = o.nextOp?.() ?? {
      resource: o.resources[Math.floor(Math.random() * o.resources.length)]!,
      workMs: o.workMs,
      lockOptions: o.lockOptions,
    };
    const left = Math.max(0, Math.floor(o.deadline - performance.now()));
    try {
      await o.recorder.withLock(
        resource,
        async (lock) => {
          o.onHolding?.();
          const { value } = await store.read(resource);
          await sleep(workMs);
          // No lock.signal check before writing, on purpose: a paused holder's write goes out late,
          // and the fence is what must stop it.
          if (await store.write(resource, Number(value ?? 0) + 1, lock.fence)) stats.accepted++;
          else stats.rejected++;
        },
        { ...lockOptions, timeout: Math.min(lockOptions?.timeout ?? left, left) },
      );
      stats.holds++;
    } catch (error) {
      const code = codeOf(error);
      if (code === 'LOCK_LOST') stats.lost++;
      else if (code === 'ACQUIRE_TIMEOUT') stats.timeouts++;
      else {
        // Nodes or the store failing under a fault: note it, back off a little, carry on.
        if (stats.errors++ < MAX_ERROR_MESSAGES) o.onError(error);
        await sleep(10);
      }
    }
  }
}
