// In-process coalescing of a process's mutex waiters (issue 25). Only one caller of this manager per
// resource set, the head of the local line, runs the node-level acquire (wait.ts: acquireWaiting) and so takes
// part in the nodes' queue; the others wait here, each with its own timeout, signal and events, in arrival
// order. When the head settles (acquired, timed out, aborted, failed), the next caller in line goes to the nodes
// with its own arrival as its place in their queue. A burst of thousands of callers on one key then costs the
// nodes what one waiter per process costs, and its memory is a small record per caller.
import type { RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import type { ReleaseNotifications } from './notifications.js';
import type { Redlock } from './redlock.js';
import { onAbort } from './abort-listeners.js';
import { queueLease, ticketOf, type Arrival } from './wait.js';
import { BusyMarks } from './handed-grant.js';
import type { Successor } from './lease.js';
import type { Attempt } from './types.js';

/** The node-level acquire of one caller (acquireWaiting, bound to the manager's nodes). */
export type NodeAcquire = (
  resources: readonly string[],
  opts: ResolvedAcquire,
  signal: AbortSignal | undefined,
  onRetry: (info: RetryInfo) => void,
  arrival?: Arrival,
) => Promise<WaitResult>;

/** Keeps the resources' release channels subscribed while a line exists; returns the function that lets go. */
export type KeepSubscribed = (resources: readonly string[]) => () => void;

/** A caller waiting in the process: a node of its line's doubly linked list (O(1) to leave from anywhere). */
interface Waiter {
  readonly resources: readonly string[];
  readonly opts: ResolvedAcquire;
  readonly signal: AbortSignal | undefined;
  readonly onRetry: (info: RetryInfo) => void;
  readonly arrival: Arrival;
  readonly resolve: (result: WaitResult) => void;
  readonly reject: (error: unknown) => void;
  timer: NodeJS.Timeout | undefined;
  stopListening: (() => void) | undefined;
  prev: Waiter | undefined;
  next: Waiter | undefined;
}

/** The callers of this process for one resource set: one of them at the nodes, the rest in arrival order. */
interface Line {
  first: Waiter | undefined;
  last: Waiter | undefined;
  /** the last head's caller holds the lock: the next head waits for its release (or PARK_MS), see #atNodes */
  parked: NodeJS.Timeout | undefined;
  /** lets go of the release channels kept subscribed between two heads (undefined: nobody has queued yet) */
  unsubscribe: (() => void) | undefined;
}

export class LocalQueues {
  /** single-resource lines by resource name; multi-resource lines (rare) by their sorted list, apart */
  readonly #single = new Map<string, Line>();
  readonly #multi = new Map<string, Line>();

  constructor(
    private readonly nodeAcquire: NodeAcquire,
    private readonly keepSubscribed: KeepSubscribed,
    /**
     * gives back what a release did for a caller that left its line before taking it up (see successor): the
     * lock it granted, or the place in the nodes' queue it took under `token`
     */
    private readonly giveBack: (resources: readonly string[], token: string, handed: Promise<Attempt | undefined>) => void,
  ) {}

  /**
   * acquire() of a mutex: straight to the nodes when no other caller of this process waits for the same
   * resources (the common case costs one map lookup and insert), else in line behind them. A single attempt
   * (tryAcquire, timeout 0) never waits, so it never queues here either.
   */
  acquire(
    resources: readonly string[],
    opts: ResolvedAcquire,
    signal: AbortSignal | undefined,
    onRetry: (info: RetryInfo) => void,
  ): Promise<WaitResult> {
    if (opts.timeout <= 0) return this.nodeAcquire(resources, opts, signal, onRetry);
    const map = resources.length === 1 ? this.#single : this.#multi;
    const key = resources.length === 1 ? (resources[0] as string) : JSON.stringify(resources);
    const line = map.get(key);
    if (!line) {
      const created: Line = { first: undefined, last: undefined, parked: undefined, unsubscribe: undefined };
      map.set(key, created);
      return this.#atNodes(map, key, created, this.nodeAcquire(resources, opts, signal, onRetry));
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    // The release channels stay subscribed from head to head: each new head listens before its first attempt.
    line.unsubscribe ??= this.keepSubscribed(resources);
    return new Promise<WaitResult>((resolve, reject) => {
      const waiter: Waiter = {
        resources,
        opts,
        signal,
        onRetry,
        arrival: { started: monotonicNow() },
        resolve,
        reject,
        timer: undefined,
        stopListening: undefined,
        prev: line.last,
        next: undefined,
      };
      if (line.last) line.last.next = waiter;
      else line.first = waiter;
      line.last = waiter;
      // timeout: Infinity (wait until the signal aborts), or beyond what one timer can hold: no timer.
      if (opts.timeout <= MAX_TIMER_MS)
        waiter.timer = setTimeout(() => {
          this.#leave(line, waiter);
          reject(
            new LockTimeoutError(resources, opts.timeout, 'held by another owner (waited in line behind earlier callers of this process)'),
          );
        }, opts.timeout);
      if (signal)
        waiter.stopListening = onAbort(signal, () => {
          this.#leave(line, waiter);
          reject(signal.reason);
        });
    });
  }

  /** Callers waiting in this process for `resource` (single-resource lines), the one at the nodes not counted. */
  waitingHere(resource: string): number {
    let n = 0;
    for (let w = this.#single.get(resource)?.first; w; w = w.next) n++;
    return n;
  }

  /**
   * The caller next in line for `resource`, parked behind a holder of this process (see #atNodes), as the
   * release of that holder grants it the lock or takes its place in line (release.lua, redlock.ts releaseTo):
   * its owner token, chosen now, its arrival, ttl and queue lease, and where the release's outcome goes (its
   * arrival: the caller takes it as its first attempt). Undefined when none is parked (nobody waits here, or
   * the next one has already gone to the nodes' queue).
   */
  successor(resource: string, newToken: () => string, nodeTimeout: number): Successor | undefined {
    const line = this.#single.get(resource);
    const next = line?.parked ? line.first : undefined;
    if (!next?.opts.fair || next.arrival.handed) return undefined;
    const arrival = next.arrival;
    arrival.token ??= newToken();
    return {
      token: arrival.token,
      ticket: ticketOf(arrival),
      ttl: next.opts.ttl,
      lease: queueLease(next.opts, nodeTimeout),
      marks: (arrival.marks ??= new BusyMarks()),
      handed: (attempt) => {
        arrival.handed = attempt;
      },
    };
  }

  /**
   * A caller of this process just released its lock on `resource` (the release requests are written): the
   * next head, parked meanwhile, starts now, and its first attempt reaches each node right behind the release.
   */
  released(resource: string): void {
    const line = this.#single.get(resource);
    if (!line?.parked) return;
    clearTimeout(line.parked);
    line.parked = undefined;
    this.#next(this.#single, resource, line);
  }

  /**
   * The line's head is at the nodes with `work`; once it settles, the next caller in line goes. When the head
   * got the lock (one resource), the next one is parked until that caller's release, so its attempt rides right
   * behind the release: the lock changes hands in one round trip instead of a queued attempt, the release's
   * notification and a second attempt. The acquire script still decides by arrival: a waiter of another
   * process with an earlier ticket gets the lock first, and the head queues behind it. A holder that does not
   * release soon (a long task, a lost lock) leaves the next head parked only PARK_MS: then it takes its place
   * in the nodes' queue as usual.
   */
  #atNodes(map: Map<string, Line>, key: string, line: Line, work: Promise<WaitResult>): Promise<WaitResult> {
    // Two closures per head, not three: a burst on distinct keys makes one line, and one head, per caller.
    work.then(
      (): void => {
        if (map !== this.#single || !line.first) return this.#next(map, key, line);
        line.parked = setTimeout(() => {
          line.parked = undefined;
          this.#next(map, key, line);
        }, PARK_MS);
      },
      () => this.#next(map, key, line),
    );
    return work;
  }

  /** A caller leaves its line before its turn (timeout, abort): a lock a release granted it meanwhile is given back. */
  #leave(line: Line, waiter: Waiter): void {
    leave(line, waiter);
    const { handed, token } = waiter.arrival;
    if (handed && token) this.giveBack(waiter.resources, token, handed);
  }

  #next(map: Map<string, Line>, key: string, line: Line): void {
    const waiter = line.first;
    if (!waiter) {
      map.delete(key);
      line.unsubscribe?.();
      return;
    }
    leave(line, waiter);
    const { resources, opts, signal, onRetry, arrival } = waiter;
    void this.#atNodes(map, key, line, this.nodeAcquire(resources, opts, signal, onRetry, arrival)).then(waiter.resolve, waiter.reject);
  }
}

/** How long the next head waits for a holder of this process to release before it queues on the nodes anyway. */
const PARK_MS = 20;

/** The longest delay setTimeout takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Takes `waiter` out of its line, with its timer and abort listener. */
function leave(line: Line, waiter: Waiter): void {
  clearTimeout(waiter.timer);
  waiter.stopListening?.();
  if (waiter.prev) waiter.prev.next = waiter.next;
  else if (line.first === waiter) line.first = waiter.next;
  if (waiter.next) waiter.next.prev = waiter.prev;
  else if (line.last === waiter) line.last = waiter.prev;
  waiter.prev = undefined;
  waiter.next = undefined;
}

/**
 * Keeps the release channels of `resources` subscribed (a watch that listens to nothing): between one head
 * settling and the next starting, the last listener would otherwise leave, and every head would pay an
 * unsubscribe, a subscribe and an extra attempt.
 */
export function keepSubscribed(redlock: Redlock, notifications: ReleaseNotifications, resources: readonly string[]): () => void {
  const released = redlock.keys(resources).map((k) => k.channel);
  const watch = notifications.watch([...released, ...released.map((c) => redlock.managerChannel(c))], () => undefined);
  return () => watch.stop();
}
