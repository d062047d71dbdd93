import type { RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError, QuorumError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import { backoffDelay } from '../backoff.js';
import { onAbort } from './abort-listeners.js';
import { plantedFlaws } from './planted-flaws.js';
import { acquireRound, dequeueAll } from './cross-slot.js';
import type { ReleaseNotifications, Watch } from './notifications.js';
import { Wakeup } from './notifications.js';
import { BusyMarks } from './handed-grant.js';
import { Redlock, type Attempt, type Grant, type QueueOptions } from './redlock.js';

/**
 * How long a waiter's place in the queue is kept without a new attempt. A live
 * waiter attempts at least every retry.maxDelay (plus an attempt's own time, at
 * most two rounds of nodeTimeout); a crashed one blocks the queue no longer than this.
 */
export function queueLease(opts: ResolvedAcquire, nodeTimeout: number): number {
  return 2 * opts.retry.maxDelay + 4 * nodeTimeout;
}

/**
 * A waiter's place in line: its arrival time (`monotonic`, read off monotonicNow, which is performance.now), as
 * wall-clock ms with sub-millisecond precision so that callers rarely tie.
 */
export function ticketAt(monotonic: number): string {
  return (performance.timeOrigin + monotonic).toFixed(3);
}

/**
 * When a caller that waited in its process (local-queue.ts) arrived: its timeout counts from then, and its
 * place in the nodes' queue is its arrival, not the moment its turn to go to the nodes came.
 */
export interface Arrival {
  /** monotonic ms */
  readonly started: number;
  /** see ticketAt; undefined: read off `started` when the caller queues (ticketOf), which the uncontended acquire never does */
  readonly ticket?: string;
  /**
   * The owner token it will use at the nodes, when chosen before it got there: a release by this process
   * granted it the lock under this token (local-queue.ts successor, release.lua).
   */
  token?: string;
  /** that release's outcome for it: the lock acquired, its place in line taken (busy), or undefined (it makes its own round) */
  handed?: Promise<Attempt | undefined>;
  /** where that release noted the places it took (handed-grant.ts): the waiter's own marks from then on */
  marks?: BusyMarks;
  /**
   * called once the first attempt has settled: the caller's admission slot (admission.ts) goes to the next; called
   * again when the call ends (also when it failed before its first attempt settled), so it must be idempotent
   */
  firstAttemptDone?(): void;
}

/** The caller's place in line: the ticket it brought, or its start's (the same moment, read once). */
export function ticketOf(arrival: Arrival): string {
  return arrival.ticket ?? ticketAt(arrival.started);
}

/**
 * acquire() of a mutex at the nodes, one step after the other (the class below, in this order):
 *
 *   tryOnce      the acquire script on every node (redlock.ts acquireOnce). One resource, free and nobody
 *                queued: its cheap path (SET NX PX + fence). When nobody waits for it in this process, the
 *                request is token and ttl alone, a bare try; when others do (we listen already), the same
 *                call, busy, takes our place in each node's queue (enqueue), ordered by our ticket (arrival),
 *                which is the same on every node.
 *                A caller that a release of its own process granted the lock (local-queue.ts successor,
 *                redlock.ts releaseTo) takes that release's outcome instead, and makes this round only if
 *                the grant fell short.
 *   listen       subscribe to the release channels: this manager's own, where a release names the waiter
 *                it handed the lock to, and the shared one ('*': a lock deleted with nobody queued); then at
 *                once an attempt that takes our place in line (a release may have slipped in meanwhile)
 *   awaitTurn    sleep until the nodes that blocked us name us, or a timer: the holder's lease end, a
 *                capped backoff, or (not first in line) keeping our place before its lease lapses
 *   takeHanded   a release hands the lock to the first live waiter in line and tells it the grant (release.lua,
 *                _handover.lua). A fair one-resource waiter takes the grants up without a request when it can
 *                date them (handed-grant.ts: a fence above the counter its last queued attempt saw came after
 *                that attempt, so the lease counts from its send time); the lock then extends itself to its
 *                ttl in the background (Lock.topUp).
 *   confirm      otherwise the next attempt. The key holds our token when we wake, and this attempt takes it
 *                as ours: our ttl from now, a new fence. Validity counts from this request's send time
 *                (dateLease), never from the notification, which cannot say when the grant happened. Grants on
 *                less than a quorum are given back at once (released, so each node hands them on to its next
 *                waiter).
 *   agreeOnFence (redlock.ts) the fence: the largest counter of the quorum, written back where it lags
 *
 * With fair: false the queue is ignored and every release wakes every waiter of this process, as in plain
 * Redlock implementations. A single attempt (tryAcquire, timeout 0) stops after tryOnce.
 */
export function acquireWaiting(
  redlock: Redlock,
  notifications: ReleaseNotifications,
  resources: readonly string[],
  opts: ResolvedAcquire,
  signal: AbortSignal | undefined,
  onRetry: (info: RetryInfo) => void,
  arrival?: Arrival,
): Promise<WaitResult> {
  signal?.throwIfAborted();
  return new MutexWait(redlock, notifications, resources, opts, signal, onRetry, arrival).run();
}

class MutexWait {
  readonly #token: string;
  readonly #started: number;
  readonly #deadline: number;
  /** false for a single attempt (timeout 0) */
  readonly #waits: boolean;
  /** built when the caller first needs a place in line (#queue): the uncontended acquire never does */
  #queued: QueueOptions | undefined;
  /** the attempt still on its way (we leave the queues only after it, since it may still add us) */
  #inFlight: Promise<unknown> | undefined;
  #attempts = 0;
  #wakeup: Wakeup | undefined;
  #watch: Watch | undefined;
  #channels: string[] | undefined;
  /** fair single-resource waits: a release by this process may wake us at once (LocalWaiters) */
  readonly #handoff: string | undefined;
  /**
   * how the caller came (local-queue.ts, admission.ts): its ticket and marks when it brought them, the outcome
   * of a release that granted it the lock (`handed`), and its admission slot, freed once the first attempt settled
   */
  readonly #arrival: Arrival | undefined;

  constructor(
    private readonly redlock: Redlock,
    private readonly notifications: ReleaseNotifications,
    private readonly resources: readonly string[],
    private readonly opts: ResolvedAcquire,
    private readonly signal: AbortSignal | undefined,
    private readonly onRetry: (info: RetryInfo) => void,
    arrival: Arrival | undefined,
  ) {
    this.#token = arrival?.token ?? redlock.waiterToken();
    this.#started = arrival?.started ?? monotonicNow();
    this.#deadline = this.#started + opts.timeout;
    this.#waits = opts.timeout > 0;
    this.#handoff = opts.fair && resources.length === 1 ? (resources[0] as string) : undefined;
    this.#arrival = arrival;
  }

  /** How the caller's attempts stand in the nodes' queues (built once, when first needed). */
  get #queue(): QueueOptions {
    if (this.#queued) return this.#queued;
    const { opts, resources } = this;
    const waits = this.#waits;
    const arrival = this.#arrival;
    this.#queued = {
      // A single attempt (tryAcquire, timeout 0) does not queue, so it does not defer to the queue either: the
      // contract's tryAcquire is null only while another owner holds the lock (a dead waiter at the head of the
      // line must not make a free lock look taken).
      fair: opts.fair && waits,
      // The caller's arrival: the moment it started, here or in its process's line (local-queue.ts).
      ticket: waits && opts.fair ? (arrival ? ticketOf(arrival) : ticketAt(this.#started)) : '',
      lease: this.#lease(),
      watch: !opts.fair && waits,
      // A fair one-resource waiter dates the grants releases hand it from its queued attempts (handed-grant.ts).
      marks: opts.fair && waits && resources.length === 1 ? (arrival?.marks ?? new BusyMarks()) : undefined,
    };
    return this.#queued;
  }

  /**
   * What an attempt that takes no place in line asks for (a first attempt; a fair one still lets queued waiters go
   * first), without building #queue.
   */
  #bareTry(): QueueOptions {
    return { fair: this.opts.fair && this.#waits, ticket: '', lease: this.#lease() };
  }

  #lease(): number {
    return queueLease(this.opts, this.redlock.options.nodeTimeout);
  }

  run(): Promise<WaitResult> {
    // Already subscribed in this process (others wait here too): listen before the first attempt, so that
    // no release between the attempt and the wait can slip by, and no extra attempt is needed.
    if (this.#waits && this.notifications.watching && this.notifications.isReady(this.#channelNames())) this.#listen();
    if (this.#arrival?.handed || this.#watch) return this.#wait(undefined);
    // Nobody waits for it in this process (not listening yet): the first round is a bare try, whose request is
    // token and ttl alone (redlock.ts acquireArgs). Busy, it takes no place in line; the attempt that follows
    // the subscription at once (subscribedLate below) does, with the ticket of our arrival. Granted (the
    // uncontended acquire), the call ends here, without entering the wait loop's async frame.
    return this.#round(false, this.#bareTry()).then(
      (first) => {
        if (first.kind !== 'acquired') return this.#wait(first);
        this.#arrival?.firstAttemptDone?.();
        return this.#result(first.grant);
      },
      (error: unknown) => this.#wait(new FirstRoundFailed(error)),
    );
  }

  /** run() from its first round's outcome on (undefined: that round is still to make), through the wait loop. */
  async #wait(first: Attempt | FirstRoundFailed | undefined): Promise<WaitResult> {
    try {
      if (first instanceof FirstRoundFailed) throw first.error;
      const bare = this.#watch ? this.#queue : this.#bareTry();
      const handed = this.#arrival?.handed;
      let last = first ?? ((handed && (await this.#takeHanded(handed))) || (await this.#round(false, bare)));
      if (this.#nodesFailed(last)) last = await this.#round(false, bare);
      this.#arrival?.firstAttemptDone?.();
      if (last.kind === 'acquired') return this.#result(last.grant);
      this.#stopUnlessWaiting(last);
      // Not subscribed before the attempt: a release may have slipped in before the subscription took,
      // so the first turn comes at once (it is part of the first try, not a wake-up).
      const subscribedLate = !this.#watch;
      if (subscribedLate) await guard(this.redlock, this.#listen().ready, this.signal);
      if (this.#handoff) this.redlock.localWaiters.add(this.#handoff, this.#wakeup as Wakeup, this.#queue.ticket);
      for (let turn = 0; ; turn++) {
        const atOnce = turn === 0 && subscribedLate;
        const reason = atOnce ? 'notified' : await this.#awaitTurn(last, subscribedLate ? turn - 1 : turn);
        if (monotonicNow() >= this.#deadline) throw new LockTimeoutError(this.resources, this.opts.timeout, whyNot(last));
        if (!atOnce) this.onRetry({ resources: this.resources, attempt: subscribedLate ? turn : turn + 1, reason, waited: this.#waited() });
        last = await this.#confirm(reason);
        if (last.kind === 'acquired') return this.#result(last.grant, last.provisional);
        this.#stopUnlessWaiting(last);
      }
    } catch (error) {
      // Leave the queues once our last attempt has settled (it may still add us, or a release may have
      // handed us the lock meanwhile: dequeue.lua passes it on), so the next waiter need not wait out our lease.
      if (this.#queue.ticket !== '') {
        const leave = (): Promise<void> => dequeueAll(this.redlock, this.resources, this.#token);
        this.redlock.background(this.#inFlight ? this.#inFlight.then(leave, leave) : leave());
      }
      throw error;
    } finally {
      // Also when the first attempt threw: the caller's admission slot goes to the next caller (idempotent).
      this.#arrival?.firstAttemptDone?.();
      this.#watch?.stop();
      if (this.#handoff && this.#wakeup) this.redlock.localWaiters.remove(this.#handoff, this.#wakeup);
    }
  }

  /**
   * Step 1 (and every later attempt) is one acquire round (#round: cheap path, or a place in line when busy).
   * A round that failed only on node errors is tried once more at once (acquire, not tryAcquire): a single stall
   * of this process longer than nodeTimeout must not fail a call with seconds of timeout left. A second such
   * round in a row means nodes are down, and acquire says so with QuorumError.
   */
  #nodesFailed(attempt: Attempt): boolean {
    return attempt.kind === 'no-quorum' && this.#waits && monotonicNow() < this.#deadline;
  }

  /** Step 2: listen for the releases that name us (or anyone). */
  #listen(): Watch {
    const woken = (this.#wakeup ??= new Wakeup(this.opts.fair ? this.#token : undefined, plantedFlaws.wakeupGrant));
    this.#watch = this.notifications.watch(this.#channelNames(), (node, message) => woken.notify(node, message));
    return this.#watch;
  }

  /** Step 3: sleep until the nodes that blocked us said we may go (or named us), or a timer ran out. */
  #awaitTurn(last: Attempt, retry: number): Promise<RetryInfo['reason']> {
    const { delay, needed, only } = nextWait(last, this.opts, this.#queue, retry, this.#deadline);
    return (this.#wakeup as Wakeup).wait(delay, needed, this.signal, only);
  }

  /**
   * Step 4: the attempt after a wake-up. A key handed to us is taken as ours (acquire.lua), and its
   * validity counts from this request's send time (redlock.ts acquireOnce: dateLease). Unfair waiters woken
   * by a release ask the leader first, so that waiters woken together do not split the votes; woken by the
   * timer, the holder may have expired or failed to release somewhere: ask everyone.
   */
  async #confirm(reason: RetryInfo['reason']): Promise<Attempt> {
    const wakeup = this.#wakeup as Wakeup;
    const handedBy = wakeup.namedBy();
    const grants = wakeup.takeGrants();
    wakeup.reset();
    const shortcut = wakeup.takeShortcut();
    if (plantedFlaws.wakeupGrant && !shortcut && handedBy >= this.redlock.quorum)
      return { kind: 'acquired', grant: this.redlock.unconfirmedGrant(this.resources, this.#token, this.opts.ttl) };
    // Woken by a release of this process (the shortcut), its attempt right behind that release is the faster way.
    const handed = grants && !shortcut && this.#takeHandedGrant(grants);
    if (handed) {
      // Decided here and now in the common case (no promise, no guard): the caller's lock is one reaction away.
      const taken = handed instanceof Promise ? await handed : handed;
      if (taken.kind === 'acquired') return taken;
    }
    let attempt = await this.#round(!this.opts.fair && reason === 'notified');
    if (this.#nodesFailed(attempt)) attempt = await this.#round(false);
    if (shortcut && this.#handoff) this.redlock.localWaiters.outcome(this.#handoff, attempt.kind === 'acquired');
    return attempt;
  }

  // Helpers of the steps above.

  /** Step 4 without a round (takeHanded above): the releases that named us granted us the lock, each grant dated (handed-grant.ts). */
  #takeHandedGrant(grants: ReadonlyArray<string | undefined>): Attempt | Promise<Attempt> | undefined {
    // A handed key's lease is what was left of our place: the queue lease from the attempt that dates it. A ttl
    // shorter than that is confirmed by an attempt instead: a holder frozen before its top-up lands would
    // otherwise keep the key for the queue lease, longer than its own ttl would.
    const validFor = this.#queue.lease;
    if (!this.#queue.marks || this.opts.ttl < validFor) return undefined;
    const taken = this.redlock.takeHanded(this.resources, this.#token, this.opts.ttl, validFor, grants, this.#queue);
    if (!taken) return undefined;
    this.#attempts++;
    if (taken instanceof Promise) {
      this.#inFlight = taken;
      return guard(this.redlock, taken, this.signal);
    }
    // Nothing is on its way: only an abort already signalled stops it (the grant goes back, as guard would do).
    if (this.signal?.aborted) {
      giveBack(this.redlock, taken);
      throw this.signal.reason;
    }
    return taken;
  }

  #takeHanded(handed: Promise<Attempt | undefined>): Promise<Attempt | undefined> {
    this.#attempts++;
    this.#inFlight = handed;
    // Aborted meanwhile: guard releases the lock when it arrives.
    return guard(this.redlock, handed, this.signal);
  }

  #round(leaderFirst: boolean, queue = this.#queue): Promise<Attempt> {
    this.#attempts++;
    const work = acquireRound(this.redlock, this.resources, this.#token, this.opts.ttl, queue, leaderFirst);
    // Kept as is (no catch handler per round): it is always handled, by guard or by the await of the caller.
    this.#inFlight = work;
    return guard(this.redlock, work, this.signal);
  }

  /** Throws what a failed attempt amounts to when waiting cannot help: nodes down, a quarantine past the deadline, no time to wait. */
  #stopUnlessWaiting(last: Attempt): void {
    throwIfNoQuorum(last, this.resources);
    throwIfQuarantineOutlasts(last, this.resources, this.#deadline);
    if (!this.#waits) throw new LockTimeoutError(this.resources, this.opts.timeout, whyNot(last));
  }

  /** Fair waiters are woken on this manager's own channel; '*' (nobody queued, a forced release) goes to the shared one. */
  #channelNames(): string[] {
    if (!this.#channels) {
      const released = this.redlock.keys(this.resources).map((k) => k.channel);
      this.#channels = this.opts.fair ? [...released, ...released.map((c) => this.redlock.managerChannel(c))] : released;
    }
    return this.#channels;
  }

  #waited(): number {
    return monotonicNow() - this.#started;
  }

  #result(grant: Grant, provisional?: true): WaitResult {
    const result = { grant, attempts: this.#attempts, waited: this.#waited() };
    return provisional ? { ...result, provisional } : result;
  }
}

/** The first round of MutexWait.run rejected (an abort, the manager closing): #wait throws it as its own. */
class FirstRoundFailed {
  constructor(readonly error: unknown) {}
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
 * acquires is released. Both are the manager's background work (Redlock.background),
 * so close(), whose abort this may be, waits for them before it closes the connections.
 */
export function guard<T>(redlock: Redlock, work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const aborted = (): void => {
      reject(signal.reason);
      redlock.background(work.then((value) => giveBack(redlock, value as Attempt | undefined)));
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

/**
 * A lock an abandoned attempt won after all (its caller gave up: an abort) is released at once, in the background
 * (close() waits for it: a manager closing must not leave such a lock on the nodes for its ttl).
 */
function giveBack(redlock: Redlock, attempt: Attempt | undefined): void {
  if (attempt?.kind === 'acquired') redlock.background((attempt.grant.ops ?? redlock).release(attempt.grant));
}
