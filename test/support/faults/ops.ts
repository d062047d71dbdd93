// The fault workload's client operations, drawn from a seeded PRNG: withLock, acquire with explicit
// extends and release, tryAcquire, on one resource or two. A pure function of the worker's seed, so a
// failing schedule replays the same choices (only real timing differs).
import type { WithLockOptions } from '../../../src/index.js';
import { seededRandom } from '../../../src/cli/demo/chaos.js';

/** withLock: auto-extended (or not), `workMs` between the store read and the fenced write. */
export interface WithLockOp {
  readonly kind: 'withLock';
  /** sorted; two for a multi-resource lock */
  readonly resources: readonly string[];
  readonly workMs: number;
  readonly lockOptions?: WithLockOptions;
}

/** One slice of an acquired lock's work, then an explicit extend (or none). */
export interface Slice {
  readonly workMs: number;
  /**
   * 'same': `lock.extend()` (the lock's own ttl); a number: `lock.extend(ttl)`; null: no extend after this
   * slice, so the lease may run out (a late write must then be refused by the fence)
   */
  readonly extend: 'same' | number | null;
}

/** acquire (no auto-extension), the slices with their extends, the fenced writes, release. */
export interface AcquireOp {
  readonly kind: 'acquire';
  readonly resources: readonly string[];
  readonly ttl: number;
  readonly timeout: number;
  readonly fair: boolean;
  readonly slices: readonly Slice[];
}

/** tryAcquire (one attempt; null is a miss), work, the fenced writes, release. */
export interface TryAcquireOp {
  readonly kind: 'tryAcquire';
  readonly resources: readonly string[];
  readonly ttl: number;
  readonly autoExtend: boolean;
  readonly fair: boolean;
  readonly workMs: number;
}

export type HoldOp = WithLockOp | AcquireOp | TryAcquireOp;
export type OpKind = HoldOp['kind'];

/**
 * Operations drawn at random per holding from a seeded PRNG (JSON-safe: it travels in a WorkloadConfig), so a
 * worker's sequence of choices is a function of its seed. Ranges are [min, max], inclusive, in ms. The rates
 * of the other kinds are optional (0 when absent): a variation without them draws withLock only.
 */
export interface OpVariation {
  readonly seed: number;
  readonly ttlMs: readonly [number, number];
  /** acquire timeout (0 = one attempt); still capped by the time left */
  readonly timeoutMs: readonly [number, number];
  /** work = ttl x a factor drawn in this range (below 1: shorter than the lease) ... */
  readonly workFactor: readonly [number, number];
  /** ... or, for this share of holdings (or of slices), in this one (above 1: longer than the lease) */
  readonly longWork?: { readonly rate: number; readonly factor: readonly [number, number] };
  /** share of holdings with autoExtend off (withLock's default is on): work longer than the ttl then loses the lock */
  readonly noExtendRate: number;
  /** share of holdings with fair: false */
  readonly unfairRate: number;
  /** share of operations that are acquire + sliced work with explicit extends + release */
  readonly acquireRate?: number;
  /** share of operations that are tryAcquire */
  readonly tryAcquireRate?: number;
  /** share of operations on two of the resources at once (drawn only when there are at least two) */
  readonly multiRate?: number;
  /** acquire: how many work slices, [min, max] */
  readonly slices?: readonly [number, number];
  /** acquire: share of slice boundaries with no extend */
  readonly skipExtendRate?: number;
  /** acquire: share of extends asking for a new ttl (drawn from ttlMs) rather than the lock's own */
  readonly newTtlRate?: number;
}

/** The nextOp of a HoldLoop drawing each operation's kind, resources, ttl, timeout, work and flags from `v`. */
export function variedOps(v: OpVariation, resources: readonly string[]): () => HoldOp {
  const random = seededRandom(v.seed);
  const between = ([lo, hi]: readonly [number, number]): number => lo + random() * (hi - lo);
  const chance = (rate: number | undefined): boolean => random() < (rate ?? 0);
  const pickResources = (): string[] => {
    const first = Math.floor(random() * resources.length);
    if (resources.length < 2 || !chance(v.multiRate)) return [resources[first]!];
    // A second, different one: the offset skips `first` itself.
    const second = (first + 1 + Math.floor(random() * (resources.length - 1))) % resources.length;
    return [resources[first]!, resources[second]!].sort();
  };
  const work = (ttl: number): number => {
    const long = v.longWork !== undefined && chance(v.longWork.rate);
    return Math.round(ttl * between(long ? v.longWork!.factor : v.workFactor));
  };
  return () => {
    const r = random();
    const acquireRate = v.acquireRate ?? 0;
    const kind: OpKind = r < acquireRate ? 'acquire' : r < acquireRate + (v.tryAcquireRate ?? 0) ? 'tryAcquire' : 'withLock';
    const picked = pickResources();
    const ttl = Math.round(between(v.ttlMs));
    const fair = !chance(v.unfairRate);
    if (kind === 'acquire') {
      const timeout = Math.round(between(v.timeoutMs));
      const [lo, hi] = v.slices ?? [1, 1];
      const count = lo + Math.floor(random() * (hi - lo + 1));
      const slices = Array.from({ length: count }, (_, i): Slice => {
        const workMs = work(ttl);
        // After the last slice come the writes and the release, not an extend.
        if (i === count - 1 || chance(v.skipExtendRate)) return { workMs, extend: null };
        return { workMs, extend: chance(v.newTtlRate) ? Math.round(between(v.ttlMs)) : 'same' };
      });
      return { kind, resources: picked, ttl, timeout, fair, slices };
    }
    const autoExtend = !chance(v.noExtendRate);
    const workMs = work(ttl);
    if (kind === 'tryAcquire') return { kind, resources: picked, ttl, autoExtend, fair, workMs };
    const timeout = Math.round(between(v.timeoutMs));
    return { kind, resources: picked, workMs, lockOptions: { ttl, timeout, autoExtend, fair } };
  };
}
