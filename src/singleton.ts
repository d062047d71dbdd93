// A job that runs on a schedule in many processes, but in one of them at a time: a reconciliation pass, a
// cleanup, a report. Each tick tries the job's lock once (no waiting): the process that gets it runs the job
// under withLock (the lease kept alive, lock.signal aborted if it is lost); the others skip that tick, since
// somebody is running it right now.
import { InvalidArgumentError, LockTimeoutError } from './errors.js';
import type { Lock } from './lock.js';
import type { LockManager } from './lock-manager.js';
import type { WithLockOptions } from './options.js';

/** Options of {@link scheduleSingleton}. */
export interface SingletonOptions extends Omit<WithLockOptions, 'timeout' | 'signal'> {
  /** ms between the end of one tick and the start of the next (required) */
  every: number;
  /** run the first tick at once (default `true`); else after `every` ms */
  immediately?: boolean;
  /** stops the schedule, as `stop()` does */
  signal?: AbortSignal;
  /** called with a tick's error: the job threw, or the lock could not be had for another reason than "busy" */
  onError?: (error: unknown) => void;
}

/** What {@link scheduleSingleton} returns: counters, and the way to stop. */
export interface SingletonJob extends AsyncDisposable {
  /** ticks in which this process ran the job to the end */
  readonly ran: number;
  /** ticks skipped because another process (or an earlier tick here) held the job's lock */
  readonly skipped: number;
  /** ticks that ended in an error (also given to `onError`) */
  readonly failed: number;
  /** Runs one tick now (unless one is running here), as a scheduled tick would; resolves when it ends. */
  runNow(): Promise<'ran' | 'skipped' | 'failed'>;
  /** Ends the schedule; resolves once a tick still running has ended. */
  stop(): Promise<void>;
}

/**
 * Runs `job` every `opts.every` ms under the lock `resource`, in at most one process at a time: a tick whose
 * lock is held elsewhere is skipped, never queued, so a slow run delays nobody and runs do not pile up.
 * The lock is held with auto-extension while `job` runs; pass `lock.signal` on to what the job awaits and
 * `lock.fence` to the store it writes.
 */
export function scheduleSingleton(
  locks: LockManager,
  resource: string,
  job: (lock: Lock) => Promise<void>,
  opts: SingletonOptions,
): SingletonJob {
  const { every, immediately = true, signal, onError, ...lockOptions } = opts;
  if (!Number.isInteger(every) || every < 1) throw new InvalidArgumentError(`every must be a positive integer (ms), got ${String(every)}`);
  if (typeof job !== 'function') throw new InvalidArgumentError('scheduleSingleton needs a job function');
  let ran = 0;
  let skipped = 0;
  let failed = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<'ran' | 'skipped' | 'failed'> | undefined;

  const tick = async (): Promise<'ran' | 'skipped' | 'failed'> => {
    try {
      await locks.withLock(resource, job, { ...lockOptions, timeout: 0 });
      ran++;
      return 'ran';
    } catch (error) {
      // timeout 0: one attempt; a timeout means another holder has the lock: this tick is theirs.
      if (error instanceof LockTimeoutError) {
        skipped++;
        return 'skipped';
      }
      failed++;
      onError?.(error);
      return 'failed';
    }
  };
  const runNow = (): Promise<'ran' | 'skipped' | 'failed'> => {
    if (running) {
      skipped++;
      return Promise.resolve('skipped');
    }
    running = tick().finally(() => {
      running = undefined;
    });
    return running;
  };
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => void runNow().then(() => schedule(every)), ms);
  };
  const stop = async (): Promise<void> => {
    stopped = true;
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    await running;
  };
  const onAbort = (): void => void stop();
  if (signal?.aborted) stopped = true;
  else signal?.addEventListener('abort', onAbort, { once: true });
  schedule(immediately ? 0 : every);

  return {
    get ran() {
      return ran;
    },
    get skipped() {
      return skipped;
    },
    get failed() {
      return failed;
    },
    runNow,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
