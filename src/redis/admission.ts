// Admission of a manager's mutex acquires (issue 25). A caller that goes to the nodes builds its whole acquire
// round up front: a waiter token, its queue options, the round's keys and arguments, one request per node, and
// the promises, closures and timers that go with them. In a burst of thousands of callers on distinct keys
// (nothing to coalesce) they all did so at once, and then waited for a slot on the node's connection
// (adapters/in-flight.ts): 7.8 KB of heap per caller. Here at most `limit` callers are making their first
// attempt at once; the others wait in arrival order as a small record of their arguments and start as slots
// free up (2.2 KB per caller in all, docs/benchmarks.md#burst).
//
// A slot is held only for the first attempt (wait.ts calls `firstAttemptDone`), never while a caller waits for a
// lock that is held: a caller holding one lock and asking for another must never wait for a slot that callers
// waiting on its own lock occupy. A waiting caller keeps its timeout (counted from its arrival, as its place in
// the nodes' queue is) and its signal.
//
// While a node is unresponsive (adapters/in-flight.ts) every round waits for it until nodeTimeout, so 256 at a
// time would serve at most 256 callers per nodeTimeout, where a quorum of healthy nodes could serve them all:
// then nobody waits here, at the memory cost of every caller's round, for the time a node is hung.
import type { RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import { onAbort } from './abort-listeners.js';
import { Deadlines, type Deadline } from './adapters/deadlines.js';
import { WaitingLine } from './adapters/waiting-line.js';
import type { NodeAcquire } from './local-queue.js';
import type { Arrival } from './wait.js';
import type { BusyMarks } from './handed-grant.js';
import type { Attempt } from './types.js';

/**
 * A caller waiting for its first attempt to start: its arguments and arrival, and how it gives up. It is its own
 * entry in the timeout timer's list (Deadlines) and its own Arrival, so that parking allocates little else.
 */
class Parked implements Deadline, Arrival {
  readonly at: number;
  stopListening: (() => void) | undefined = undefined;
  /** it gave up (timeout, signal) while parked: skipped when its turn comes */
  gone = false;
  /** Deadline: the timeout timer's list's links */
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlinePending = false;

  constructor(
    readonly resources: readonly string[],
    readonly opts: ResolvedAcquire,
    readonly signal: AbortSignal | undefined,
    readonly onRetry: (info: RetryInfo) => void,
    readonly started: number,
    /** its place in line when it brought one (else read off `started` when it queues: wait.ts ticketOf) */
    readonly ticket: string | undefined,
    /** the owner token chosen for it before it got here (wait.ts Arrival.token) */
    readonly token: string | undefined,
    readonly resolve: (result: WaitResult) => void,
    readonly reject: (error: unknown) => void,
    private readonly deadlines: Deadlines,
  ) {
    this.at = started + opts.timeout;
  }

  /** Its timeout ran out while it was parked (called by Deadlines). */
  expire(): void {
    this.giveUp(new LockTimeoutError(this.resources, this.opts.timeout, 'this manager had too many acquires starting at once'));
  }

  giveUp(error: unknown): void {
    if (this.gone) return;
    this.gone = true;
    this.stopWaiting();
    this.reject(error);
  }

  stopWaiting(): void {
    this.deadlines.done(this);
    this.stopListening?.();
  }
}

export class Admission {
  /** callers whose first attempt is under way */
  #starting = 0;
  /** callers waiting for a slot, oldest first */
  readonly #parked = new WaitingLine<Parked>((p) => p.gone);
  /** one timer for every parked caller's timeout */
  readonly #deadlines = new Deadlines();

  constructor(
    readonly limit: number,
    private readonly nodeAcquire: NodeAcquire,
    /** a node is unresponsive: rounds are slow for want of it, not for want of memory (no cap then) */
    private readonly degraded: () => boolean,
  ) {}

  /** Callers waiting for a slot now (some may have given up and not been dropped yet). */
  get parked(): number {
    return this.#parked.length;
  }

  /** Callers whose first attempt is under way now. */
  get starting(): number {
    return this.#starting;
  }

  /** The node-level acquire, started at once while fewer than `limit` first attempts are under way, else parked. */
  readonly acquire: NodeAcquire = (resources, opts, signal, onRetry, arrival) => {
    // #pump keeps the line empty while slots are free: nobody is passed over. A caller that a release by this
    // process granted the lock (arrival.handed) needs no request to start: it does not queue here.
    if (this.#starting < this.limit || this.degraded() || arrival?.handed) return this.#start(resources, opts, signal, onRetry, arrival);
    if (signal?.aborted) return Promise.reject(signal.reason);
    const started = arrival?.started ?? monotonicNow();
    return new Promise<WaitResult>((resolve, reject) => {
      const p = new Parked(resources, opts, signal, onRetry, started, arrival?.ticket, arrival?.token, resolve, reject, this.#deadlines);
      this.#parked.push(p);
      // A single attempt (timeout 0) has no time to run out: it waits for its one attempt.
      if (opts.timeout > 0 && opts.timeout <= MAX_TIMER_MS) this.#deadlines.track(p);
      if (signal) p.stopListening = onAbort(signal, () => p.giveUp(signal.reason));
    });
  };

  #start(
    resources: readonly string[],
    opts: ResolvedAcquire,
    signal: AbortSignal | undefined,
    onRetry: (info: RetryInfo) => void,
    arrival: Arrival | undefined,
  ): Promise<WaitResult> {
    this.#starting++;
    // The wait (wait.ts) calls firstAttemptDone once its first attempt settled, and again as it ends (also on a
    // failure before that): no promise reaction per caller here. The caller's ticket is left to be read off its
    // start when it queues (wait.ts ticketOf): the uncontended acquire never needs it.
    const admitted = new Admitted(this, arrival);
    try {
      return this.nodeAcquire(resources, opts, signal, onRetry, admitted);
    } catch (error) {
      admitted.firstAttemptDone();
      return Promise.reject(error);
    }
  }

  /** @internal An admitted caller's first attempt settled (or its call ended): its slot goes to the next. */
  slotFreed(): void {
    this.#starting--;
    this.#pump();
  }

  #pump(): void {
    while (this.#starting < this.limit || this.degraded()) {
      const p = this.#parked.shift();
      if (!p) return;
      p.stopWaiting();
      this.#start(p.resources, p.opts, p.signal, p.onRetry, p).then(p.resolve, p.reject);
    }
  }
}

/**
 * The arrival a caller goes to the nodes with (wait.ts Arrival): what it brought (a caller that waited in its
 * process, or parked here), its start, and its admission slot, freed once (firstAttemptDone). One object per
 * caller, with no closure.
 */
class Admitted implements Arrival {
  readonly started: number;
  readonly ticket: string | undefined;
  readonly token: string | undefined;
  readonly handed: Promise<Attempt | undefined> | undefined;
  readonly marks: BusyMarks | undefined;
  #holding = true;

  constructor(
    private readonly admission: Admission,
    arrival: Arrival | undefined,
  ) {
    this.started = arrival?.started ?? monotonicNow();
    this.ticket = arrival?.ticket;
    this.token = arrival?.token;
    this.handed = arrival?.handed;
    this.marks = arrival?.marks;
  }

  firstAttemptDone(): void {
    if (!this.#holding) return;
    this.#holding = false;
    this.admission.slotFreed();
  }
}

/** The longest delay setTimeout takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;
