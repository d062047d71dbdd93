// The workload every fault worker runs: lock a random resource, read the
// fenced store, work a little, write value + 1 with the lock's fence.
import type { WithLockOptions } from '../../../src/index.js';
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

export interface HoldLoop {
  readonly recorder: Recorder;
  readonly store: FencedStore;
  readonly resources: readonly string[];
  /** performance.now() at which to stop */
  readonly deadline: number;
  readonly maxHolds: number;
  readonly workMs: number;
  readonly lockOptions?: WithLockOptions;
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
    const resource = o.resources[Math.floor(Math.random() * o.resources.length)]!;
    const left = Math.max(0, Math.floor(o.deadline - performance.now()));
    try {
      await o.recorder.withLock(
        resource,
        async (lock) => {
          o.onHolding?.();
          const { value } = await store.read(resource);
          await sleep(o.workMs);
          // No lock.signal check before writing, on purpose: a paused holder's write goes out late,
          // and the fence is what must stop it.
          if (await store.write(resource, Number(value ?? 0) + 1, lock.fence)) stats.accepted++;
          else stats.rejected++;
        },
        { ...o.lockOptions, timeout: Math.min(o.lockOptions?.timeout ?? left, left) },
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
