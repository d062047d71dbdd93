// The workload every fault worker runs: lock a random resource (or two), read the
// fenced store, work a little, write value + 1 with the lock's fence. Which
// client call takes the lock and how it is kept is the operation's (ops.ts).
import type { Lock, WithLockOptions } from '../../../src/index.js';
import type { FencedStore } from './fenced-store.js';
import type { AcquireOp, HoldOp, TryAcquireOp } from './ops.js';
import type { Recorder } from './recorder.js';

/** Each operation ends as exactly one of holds, lost, timeouts, misses, errors; the rest count within one. */
export interface HoldStats {
  /** held, worked and released without being lost */
  holds: number;
  /** fenced writes the store accepted / refused as stale (one per resource of a holding) */
  accepted: number;
  rejected: number;
  lost: number;
  /** acquire timed out */
  timeouts: number;
  /** tryAcquire found the lock held (null): a miss, not an error */
  misses: number;
  /** explicit lock.extend() calls that succeeded */
  extends: number;
  errors: number;
}

export const newHoldStats = (): HoldStats => ({
  holds: 0,
  accepted: 0,
  rejected: 0,
  lost: 0,
  timeouts: 0,
  misses: 0,
  extends: 0,
  errors: 0,
});

export interface HoldLoop {
  readonly recorder: Recorder;
  readonly store: FencedStore;
  readonly resources: readonly string[];
  /** performance.now() at which to stop */
  readonly deadline: number;
  readonly maxHolds: number;
  readonly workMs: number;
  readonly lockOptions?: WithLockOptions;
  /** picks each operation (e.g. variedOps); default: withLock on a random resource (Math.random) with `workMs` and `lockOptions` */
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
  const { stats } = o;
  for (let i = 0; i < o.maxHolds && performance.now() < o.deadline; i++) {
    const op: HoldOp = o.nextOp?.() ?? {
      kind: 'withLock',
      resources: [o.resources[Math.floor(Math.random() * o.resources.length)]!],
      workMs: o.workMs,
      lockOptions: o.lockOptions,
    };
    const left = Math.max(0, Math.floor(o.deadline - performance.now()));
    try {
      const outcome =
        op.kind === 'acquire'
          ? await acquired(o, op, Math.min(op.timeout, left))
          : op.kind === 'tryAcquire'
            ? await tried(o, op)
            : await o.recorder.withLock(op.resources, (lock) => critical(o, lock, () => sleep(op.workMs)), {
                ...op.lockOptions,
                timeout: Math.min(op.lockOptions?.timeout ?? left, left),
              });
      if (outcome === 'missed') stats.misses++;
      else stats.holds++;
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

/** Read every resource of the lock, work, write each value + 1 with the lock's one fence (larger than each resource's last). */
async function critical(o: HoldLoop, lock: Lock, work: () => Promise<void>): Promise<'held'> {
  o.onHolding?.();
  const values = await Promise.all(lock.resources.map((r) => o.store.read(r)));
  await work();
  // No lock.signal check before writing, on purpose: a paused holder's write goes out late,
  // and the fence is what must stop it.
  for (const [i, resource] of lock.resources.entries()) {
    if (await o.store.write(resource, Number(values[i]?.value ?? 0) + 1, lock.fence)) o.stats.accepted++;
    else o.stats.rejected++;
  }
  return 'held';
}

/** As withLock does: always release, and a lock lost meanwhile rejects with its LockLostError even if `fn` resolved. */
async function releasing(lock: Lock, fn: () => Promise<'held'>): Promise<'held'> {
  try {
    await fn();
  } finally {
    await lock.release();
  }
  const reason: unknown = lock.signal.reason;
  if (codeOf(reason) === 'LOCK_LOST') throw reason;
  return 'held';
}

/** acquire, the slices of work with an explicit extend between them (or none), the writes, release. */
async function acquired(o: HoldLoop, op: AcquireOp, timeout: number): Promise<'held'> {
  const lock = await o.recorder.acquire(op.resources, { ttl: op.ttl, timeout, fair: op.fair });
  return releasing(lock, () =>
    critical(o, lock, async () => {
      for (const slice of op.slices) {
        await sleep(slice.workMs);
        if (slice.extend === null) continue;
        // A failed extend loses the lock and rejects (LockLostError): a careful holder then stops, no write.
        await (slice.extend === 'same' ? lock.extend() : lock.extend(slice.extend));
        o.stats.extends++;
      }
    }),
  );
}

/** tryAcquire: one attempt, null is a miss; else work, the writes, release. */
async function tried(o: HoldLoop, op: TryAcquireOp): Promise<'held' | 'missed'> {
  const lock = await o.recorder.tryAcquire(op.resources, { ttl: op.ttl, autoExtend: op.autoExtend, fair: op.fair });
  if (!lock) return 'missed';
  return releasing(lock, () => critical(o, lock, () => sleep(op.workMs)));
}
