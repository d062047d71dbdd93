import { monotonicNow } from '../clock.js';
import { LockTimeoutError, QuorumError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import { backoffDelay } from './backoff.js';
import type { ReleaseNotifications } from './notifications.js';
import { Wakeup } from './notifications.js';
import { Redlock, type Attempt, type Grant } from './redlock.js';

export interface RetryInfo {
  readonly resources: readonly string[];
  /** 1 for the first retry */
  readonly attempt: number;
  /** what woke the waiter: a release notification, or its backoff timer */
  readonly reason: 'notified' | 'timer';
  readonly waited: number;
}

export interface WaitResult {
  readonly grant: Grant;
  readonly attempts: number;
  readonly waited: number;
}

/**
 * acquire(): attempt; on contention, subscribe to the release channels, try
 * once more (a release may have slipped in before the subscription took),
 * then sleep until a release notification or the backoff timer, whichever is
 * first, and try again. The backoff is capped by retry.maxDelay and by the
 * time the holder's keys have left, as the nodes reported it.
 */
export async function acquireWaiting(
  redlock: Redlock,
  notifications: ReleaseNotifications,
  resources: readonly string[],
  opts: ResolvedAcquire,
  signal: AbortSignal | undefined,
  onRetry: (info: RetryInfo) => void,
): Promise<WaitResult> {
  signal?.throwIfAborted();
  const token = Redlock.newToken();
  const started = monotonicNow();
  const deadline = started + opts.timeout;
  const once = (leaderFirst: boolean): Promise<Attempt> =>
    guard(redlock, redlock.acquireOnce(resources, token, opts.ttl, leaderFirst), signal);
  // A round that failed only on node errors is tried once more at once (acquire, not tryAcquire): a
  // single stall of this process longer than nodeTimeout must not fail a call with seconds of timeout
  // left. A second such round in a row means nodes are down, and acquire says so with QuorumError.
  const attemptOnce = async (leaderFirst: boolean): Promise<Attempt> => {
    const attempt = await once(leaderFirst);
    if (attempt.kind !== 'no-quorum' || opts.timeout <= 0 || monotonicNow() >= deadline) return attempt;
    attempts++;
    return once(false);
  };

  let attempts = 1;
  let last = await attemptOnce(false);
  const result = (grant: Grant): WaitResult => ({ grant, attempts, waited: monotonicNow() - started });
  if (last.kind === 'acquired') return result(last.grant);
  throwIfNoQuorum(last, resources);
  if (opts.timeout <= 0) throw new LockTimeoutError(resources, opts.timeout, whyNot(last));

  const wakeup = new Wakeup();
  const channels = redlock.keys(resources).map((k) => k.channel);
  const stop = await guard(
    redlock,
    notifications.watch(channels, (node) => wakeup.notify(node)),
    signal,
    (unwatch) => unwatch(),
  );
  try {
    for (let retry = 0; ; retry++) {
      let reason: RetryInfo['reason'] = 'notified';
      if (retry > 0) {
        const retryAfter = last.kind === 'busy' ? last.retryAfter + 1 : Infinity;
        const needed = last.kind === 'busy' ? last.busyNodes : 1;
        const delay = Math.min(backoffDelay(opts.retry, retry - 1), retryAfter, deadline - monotonicNow());
        reason = await wakeup.wait(delay, needed, signal, last.kind === 'busy' ? last.leader : undefined);
      }
      if (monotonicNow() >= deadline) throw new LockTimeoutError(resources, opts.timeout, whyNot(last));
      if (retry > 0) onRetry({ resources, attempt: retry, reason, waited: monotonicNow() - started });
      wakeup.reset();
      attempts++;
      // Woken by a release: ask the leader first, so waiters woken together do not split the votes.
      // Woken by the timer: the holder may have expired or failed to release somewhere, so ask everyone.
      last = await attemptOnce(retry === 0 || reason === 'notified');
      if (last.kind === 'acquired') return result(last.grant);
      throwIfNoQuorum(last, resources);
    }
  } finally {
    stop();
  }
}

function whyNot(attempt: Attempt): string {
  return attempt.kind === 'expired' ? 'a quorum answered, but too slowly to leave any validity' : 'held by another owner';
}

function throwIfNoQuorum(attempt: Attempt, resources: readonly string[]): void {
  if (attempt.kind === 'no-quorum') throw new QuorumError(resources, 'acquire', attempt.successes, attempt.needed, attempt.failures);
}

/**
 * Rejects at once when the signal aborts, without waiting for the network.
 * Whatever the abandoned promise still produces is cleaned up: a lock it
 * acquires is released, a subscription it makes is dropped.
 */
function guard<T>(redlock: Redlock, work: Promise<T>, signal: AbortSignal | undefined, cleanup?: (value: T) => void): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason);
      work.then(
        (value) => {
          if (cleanup) cleanup(value);
          else if ((value as Attempt | undefined)?.kind === 'acquired')
            void redlock.release((value as Extract<Attempt, { kind: 'acquired' }>).grant);
        },
        () => undefined,
      );
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
