import type { RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError, QuorumError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import { backoffDelay } from '../backoff.js';
import { onAbort } from './abort-listeners.js';
import { acquireRound, dequeueAll } from './cross-slot.js';
import type { ReleaseNotifications, Watch } from './notifications.js';
import { Wakeup } from './notifications.js';
import { Redlock, type Attempt, type Grant, type QueueOptions } from './redlock.js';

/**
 * How long a waiter's place in the queue is kept without a new attempt. A live
 * waiter attempts at least every retry.maxDelay (plus an attempt's own time, at
 * most two rounds of nodeTimeout); a crashed one blocks the queue no longer than this.
 */
export function queueLease(opts: ResolvedAcquire, nodeTimeout: number): number {
  return 2 * opts.retry.maxDelay + 4 * nodeTimeout;
}

/** A waiter's place in line: its arrival time, with sub-millisecond precision so that callers rarely tie. */
export function ticketNow(): string {
  return (performance.timeOrigin + performance.now()).toFixed(3);
}

/**
 * When a caller that waited in its process (local-queue.ts) arrived: its timeout counts from then, and its
 * place in the nodes' queue is its arrival, not the moment its turn to go to the nodes came.
 */
export interface Arrival {
  /** monotonic ms */
  readonly started: number;
  /** see ticketNow */
  readonly ticket: string;
  /**
   * The owner token it will use at the nodes, when chosen before it got there: a release by this process
   * offered it the lock under this token (local-queue.ts successor, release.lua).
   */
  token?: string;
}

/**
 * acquire(): attempt; on contention, wait for our turn and try again.
 *
 * Fair waiting (the default): the first attempt also takes a place in each
 * resource's queue on every node, ordered by arrival time. A release hands
 * the resource to the first waiter in line by naming it in the notification,
 * so one release wakes one waiter (no thundering herd) and a caller that has
 * just released cannot barge ahead of those already waiting. A waiter that
 * is not first sleeps until it is named, waking at least every
 * retry.maxDelay to keep its place (its queue lease); the first in line also
 * retries on a capped backoff no later than the holder's lease ends, in case
 * the holder crashed or a notification was lost.
 *
 * With fair: false the queue is ignored and every release wakes every
 * waiter of this process, as in plain Redlock implementations.
 */
export async function acquireWaiting(
  redlock: Redlock,
  notifications: ReleaseNotifications,
  resources: readonly string[],
  opts: ResolvedAcquire,
  signal: AbortSignal | undefined,
  onRetry: (info: RetryInfo) => void,
  arrival?: Arrival,
): Promise<WaitResult> {
  signal?.throwIfAborted();
  const token = arrival?.token ?? redlock.waiterToken();
  const started = arrival?.started ?? monotonicNow();
  const deadline = started + opts.timeout;
  const waits = opts.timeout > 0;
  const queue: QueueOptions = {
    // A single attempt (tryAcquire, timeout 0) does not queue, so it does not defer to the queue either: the
    // contract's tryAcquire is null only while another owner holds the lock (a dead waiter at the head of the
    // line must not make a free lock look taken).
    fair: opts.fair && waits,
    ticket: waits && opts.fair ? (arrival?.ticket ?? ticketNow()) : '',
    lease: queueLease(opts, redlock.options.nodeTimeout),
  };
  let inFlight: Promise<unknown> = Promise.resolve();
  const once = (leaderFirst: boolean): Promise<Attempt> => {
    const work = acquireRound(redlock, resources, token, opts.ttl, queue, leaderFirst);
    inFlight = work.catch(() => undefined);
    return guard(redlock, work, signal);
  };
  // A round that failed only on node errors is tried once more at once (acquire, not tryAcquire): a
  // single stall of this process longer than nodeTimeout must not fail a call with seconds of timeout
  // left. A second such round in a row means nodes are down, and acquire says so with QuorumError.
  const attemptOnce = async (leaderFirst: boolean): Promise<Attempt> => {
    const attempt = await once(leaderFirst);
    if (attempt.kind !== 'no-quorum' || !waits || monotonicNow() >= deadline) return attempt;
    attempts++;
    return once(false);
  };

  let wakeup: Wakeup | undefined;
  const handoff = opts.fair && resources.length === 1 ? (resources[0] as string) : undefined;
  // Fair waiters are woken on this manager's own channel when their turn comes; '*' (nobody queued,
  // a forced release) goes to the shared one, which unfair waiters listen to alone.
  let channels: string[] | undefined;
  const channelNames = (): string[] => {
    if (!channels) {
      const released = redlock.keys(resources).map((k) => k.channel);
      channels = opts.fair ? [...released, ...released.map((c) => redlock.managerChannel(c))] : released;
    }
    return channels;
  };
  const listen = (): Watch => {
    const woken = (wakeup ??= new Wakeup(opts.fair ? token : undefined));
    return notifications.watch(channelNames(), (node, message) => woken.notify(node, message));
  };
  // Already subscribed in this process (others wait here too): listen before the first attempt, so that
  // no release between the attempt and the wait can slip by, and no extra attempt is needed.
  let watch = waits && notifications.watching && notifications.isReady(channelNames()) ? listen() : undefined;
  let attempts = 1;
  try {
    let last = await attemptOnce(false);
    const result = (grant: Grant): WaitResult => ({ grant, attempts, waited: monotonicNow() - started });
    if (last.kind === 'acquired') return result(last.grant);
    throwIfNoQuorum(last, resources);
    throwIfQuarantineOutlasts(last, resources, deadline);
    if (!waits) throw new LockTimeoutError(resources, opts.timeout, whyNot(last));

    // Not subscribed before the attempt: a release may have slipped in before the subscription took, so try once more at once.
    let tryAtOnce = false;
    if (!watch) {
      watch = listen();
      await guard(redlock, watch.ready, signal);
      tryAtOnce = true;
    }
    // A release by this process may wake us at once (LocalWaiters): single-resource fair waits only.
    if (handoff) redlock.localWaiters.add(handoff, wakeup as Wakeup, queue.ticket);
    for (let retry = 0; ; retry++) {
      let reason: RetryInfo['reason'] = 'notified';
      if (!(retry === 0 && tryAtOnce)) {
        const { delay, needed, only } = nextWait(last, opts, queue, tryAtOnce ? retry - 1 : retry, deadline);
        reason = await (wakeup as Wakeup).wait(delay, needed, signal, only);
      }
      if (monotonicNow() >= deadline) throw new LockTimeoutError(resources, opts.timeout, whyNot(last));
      // The attempt right after subscribing is part of the first try, not a wake-up.
      if (!(retry === 0 && tryAtOnce))
        onRetry({ resources, attempt: tryAtOnce ? retry : retry + 1, reason, waited: monotonicNow() - started });
      (wakeup as Wakeup).reset();
      const shortcut = (wakeup as Wakeup).takeShortcut();
      attempts++;
      // Unfair waiters woken by a release ask the leader first, so that waiters woken together do not split
      // the votes; woken by the timer, the holder may have expired or failed to release somewhere: ask everyone.
      last = await attemptOnce(!opts.fair && reason === 'notified');
      if (shortcut && handoff) redlock.localWaiters.outcome(handoff, last.kind === 'acquired');
      if (last.kind === 'acquired') return result(last.grant);
      throwIfNoQuorum(last, resources);
      throwIfQuarantineOutlasts(last, resources, deadline);
    }
  } catch (error) {
    // Leave the queue once our last attempt has settled (it may still add us), so the next waiter need not wait out our lease.
    if (queue.ticket !== '') redlock.background(inFlight.then(() => dequeueAll(redlock, resources, token)));
    throw error;
  } finally {
    watch?.stop();
    if (handoff && wakeup) redlock.localWaiters.remove(handoff, wakeup);
  }
}

/** How long to sleep after a failed attempt, and how many nodes must notify us to cut it short. */
function nextWait(
  last: Attempt,
  opts: ResolvedAcquire,
  queue: QueueOptions,
  retry: number,
  deadline: number,
): { delay: number; needed: number; only: number | undefined } {
  const left = deadline - monotonicNow();
  // A quarantine has a known end: sleep until then (a release of a holder elsewhere wakes us too).
  if (last.kind === 'quarantined') return { delay: Math.min(last.retryAfter + 1, left), needed: 1, only: undefined };
  if (last.kind !== 'busy') return { delay: Math.min(backoffDelay(opts.retry, retry), left), needed: 1, only: undefined };
  if (last.behind && queue.ticket !== '') {
    // Not our turn: the release that makes it our turn names us. Until then, only keep our place in line
    // (the queue lease leaves room for this and an attempt): the backoff at its cap, jittered in its upper
    // half so that waiters do not renew in step, and as always no later than the holder's lease ends.
    const cap = opts.retry.maxDelay;
    return { delay: Math.min(cap / 2 + Math.random() * (cap / 2), last.retryAfter + 1, left), needed: last.busyNodes, only: undefined };
  }
  const delay = Math.min(backoffDelay(opts.retry, retry), last.retryAfter + 1, left);
  return { delay, needed: last.busyNodes, only: opts.fair ? undefined : last.leader };
}

function whyNot(attempt: Attempt): string {
  if (attempt.kind === 'quarantined') return 'nodes that lost their data were still in restart quarantine';
  return attempt.kind === 'expired' ? 'a quorum answered, but too slowly to leave any validity' : 'held by another owner';
}

/**
 * A quarantine is unavailability with a known end: acquire waits it out within its timeout. One that
 * outlasts the caller's deadline (always, for a single attempt) is a QuorumError whose node errors say
 * when each node counts again.
 */
export function throwIfQuarantineOutlasts(attempt: Attempt, resources: readonly string[], deadline: number): void {
  if (attempt.kind === 'quarantined' && monotonicNow() + attempt.retryAfter >= deadline)
    throw new QuorumError(resources, 'acquire', attempt.successes, attempt.needed, attempt.failures);
}

function throwIfNoQuorum(attempt: Attempt, resources: readonly string[]): void {
  if (attempt.kind === 'no-quorum') throw new QuorumError(resources, 'acquire', attempt.successes, attempt.needed, attempt.failures);
}

/**
 * Rejects at once when the signal aborts, without waiting for the network.
 * Whatever the abandoned promise still produces is cleaned up: a lock it
 * acquires is released.
 */
export function guard<T>(redlock: Redlock, work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const aborted = (): void => {
      reject(signal.reason);
      work.then(
        (value) => {
          if ((value as Attempt | undefined)?.kind === 'acquired') {
            const { grant } = value as Extract<Attempt, { kind: 'acquired' }>;
            void (grant.ops ?? redlock).release(grant);
          }
        },
        () => undefined,
      );
    };
    if (signal.aborted) return aborted();
    // Shared per signal (abort-listeners.ts): thousands of callers guard against the manager's one closing signal.
    const stop = onAbort(signal, aborted);
    work.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}
