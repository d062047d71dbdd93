import { monotonicNow } from './clock.js';
import type { Entry, Scheduler, Timed } from './scheduler.js';
import type { Grant, LeaseOps } from './backend.js';
import { LockError, LockLostError, nodeMessage } from './errors.js';
import type { LockEvents } from './events.js';

/** What `Lock.release()` did. */
export interface ReleaseResult {
  /** nodes on which our key was found and deleted */
  readonly released: number;
  /** nodes asked */
  readonly nodes: number;
}

/** The abort reason of `lock.signal` after a normal release. */
export class LockReleasedError extends LockError {
  constructor(resources: readonly string[]) {
    super('LOCK_RELEASED', `lock on ${resources.join(', ')} was released`);
  }
}

/** What a Lock needs from its manager: nothing of how its grant was won (see hold.ts). */
export interface LockHost {
  /** extend and release of a mutex grant (a primitive's grant brings its own `ops`) */
  readonly lease: LeaseOps;
  /** nodes asked, and how many must agree, for what failure messages say */
  readonly nodeCount: number;
  readonly quorum: number;
  /** the longest one extension round can take (ms): an auto-extending lock closer to its end is watched meanwhile */
  readonly roundTimeout: number;
  /** a ttl given to `extend(ttl)`, checked against the manager's options (InvalidArgumentError) */
  checkTtl(ttl: number): number;
  /** a held mutex on one resource was released by this process: a waiter here may take it at once */
  releasedHere(resource: string): void;
  readonly scheduler: Scheduler;
  /** someone would see event `E` (a listener, a diagnostics subscriber, a meter): its payload is only built then */
  observed(event: keyof LockEvents): boolean;
  emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void;
  /** The lock is no longer held (released or lost); may be called twice (lost, then released). */
  forget(lock: Lock): void;
  /** An extension round did not extend: tried again (`retrying`) or the lock is lost by it. For metrics. */
  extensionFailed(outcome: 'retrying' | 'lost'): void;
}

type State = 'held' | 'released' | 'lost';

/** The abort reason of a released lock, before anyone asked for the error (no closure per release). */
const RELEASED = Symbol('released');

/**
 * A held lock. Its lease is only trusted through `remaining()`, computed on
 * the monotonic clock with drift already subtracted; when that runs out
 * without an extension the lock counts as lost, and `signal` aborts at once.
 *
 * Nothing is scheduled for a lock nobody watches: the wake-up at the end of
 * its validity is armed only once something would see the loss as it happens
 * (its `signal` was read, auto-extension, a 'lost' listener, a diagnostics
 * subscriber or a meter when it was acquired). Unwatched, the loss is found on
 * the lock's next use instead (`release`, `extend`, `signal`, `lostError`) or
 * by the manager's sweep of its held locks, with the same outcome.
 */
export class Lock implements AsyncDisposable, Timed {
  /** what is locked, sorted */
  readonly resources: readonly string[];
  /** this holder's random owner token (144 bits from `crypto`): the value of its keys on the nodes */
  readonly value: string;
  /**
   * The fencing token: strictly greater than every earlier successful acquire's for these resources (as
   * long as a majority of the nodes keeps its data). Hand it to the store you protect; it rejects a smaller one.
   */
  readonly fence: bigint;
  #grant: Grant;
  #state: State = 'held';
  #lostError: LockLostError | undefined;
  /** the wall-clock estimate of #grant.validUntil, made when first asked for */
  #validUntilWall: number | undefined;
  readonly #host: LockHost;
  // Made on first use of `signal`: an AbortSignal costs ~700 bytes, most holders never look at it.
  #controller: AbortController | undefined;
  /** why the lock stopped being held; RELEASED until someone needs that error (building one costs a stack trace) */
  #abortReason: LockError | typeof RELEASED | undefined;
  // One scheduler entry per watched lock, for whichever comes first: the next extension or the end of validity.
  #timer: Entry | undefined;
  /** the end of validity is watched (a wake-up armed): something sees a loss the moment it happens */
  #watched = false;
  /** monotonic time of the next auto-extension; Infinity when not auto-extending (or a round is in flight) */
  #extendAt = Infinity;
  /** auto-extension is on, and stops at this monotonic time (maxHold) */
  #autoExtend = false;
  #extendUntil = Infinity;
  #extending: Promise<unknown> | undefined;
  /** stops the store's loss watch (LeaseOps.watchLoss), when one runs */
  #unwatch: (() => void) | undefined;
  #releasing: Promise<ReleaseResult> | undefined;

  /** @internal Created by hold.ts from a won grant, unwatched (see {@link Lock.watch}). */
  constructor(host: LockHost, grant: Grant) {
    this.#host = host;
    this.#grant = grant;
    this.resources = grant.resources;
    this.value = grant.token;
    this.fence = grant.fence;
  }

  /** Aborts when the lock is lost (reason: LockLostError) or released (reason: LockReleasedError). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      // Read after the lease ran out unwatched: the signal is born aborted with the LockLostError.
      this.settle();
      this.#controller = new AbortController();
      const reason = this.#reason();
      if (reason) this.#controller.abort(reason);
      else this.watch();
    }
    return this.#controller.signal;
  }

  /** Wall-clock estimate (epoch ms) of the end of guaranteed validity, for display only. */
  get validUntil(): number {
    this.#validUntilWall ??= this.#wallClock(this.#grant.validUntil);
    return this.#validUntilWall;
  }

  /** ms of guaranteed validity left; 0 once lost or released. */
  remaining(): number {
    if (this.#state !== 'held') return 0;
    return Math.max(0, this.#grant.validUntil - monotonicNow());
  }

  /** `remaining() > 0`: neither lost nor released, and guaranteed validity is left. */
  isValid(): boolean {
    return this.remaining() > 0;
  }

  /** @internal The error the lock was lost with, if it was. */
  get lostError(): LockLostError | undefined {
    this.settle();
    return this.#lostError;
  }

  /**
   * @internal Arms the end-of-validity wake-up, so a loss is seen the moment it happens (signal aborted,
   * 'lost' emitted). Idempotent; nothing to do once the lock is no longer held.
   */
  watch(): void {
    if (this.#watched || this.#state !== 'held') return;
    this.#watched = true;
    this.#arm();
  }

  /** @internal An unwatched lock whose validity ran out is lost now, as its wake-up would have made it. */
  settle(): void {
    if (this.#state === 'held' && !this.#watched && monotonicNow() >= this.#grant.validUntil)
      this.#lose('its lease ran out without an extension');
  }

  /** Extend the lease to `ttl` ms from now on a quorum of nodes; on failure the lock is lost and this rejects with LockLostError. */
  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.#grant.ttl : this.#host.checkTtl(ttl);
    await this.#serialized(() => this.#extend(next, true));
  }

  /**
   * @internal A grant dated from before a hand-over (redis/handed-grant.ts) is valid for less than its ttl:
   * one extension to its ttl, in the background. A refusal loses the lock, as any failed extension does; one
   * that only met node errors leaves the shorter validity, which auto-extension, a watch or the caller's own
   * extend() then takes care of as usual.
   *
   * It starts after the caller's own continuation (setImmediate), not in the acquire's turn: the extension is
   * batched per node (extend-batch.ts) in a microtask that would run ahead of the caller's, and the caller would
   * start its work only once that script call was built and written (about 0.1 ms of a cross-process hand-over
   * in W4, docs/benchmarks.md). Until then the lock counts the validity it was granted with.
   */
  topUp(): void {
    setImmediate(() => void this.#serialized(() => this.#extend(this.#grant.ttl, false)).catch(() => undefined));
  }

  /** Extensions run one at a time: a later one must not be overtaken by an earlier one's reply. */
  #serialized(round: () => Promise<boolean>): Promise<boolean> {
    const run = this.#extending ? this.#extending.then(round) : round();
    const tail = run.catch(() => undefined);
    this.#extending = tail;
    void tail.then(() => {
      if (this.#extending === tail) this.#extending = undefined;
    });
    return run;
  }

  /** Compare-and-delete on all nodes: never deletes another owner's key. Idempotent; never rejects. */
  release(): Promise<ReleaseResult> {
    if (this.#releasing) return this.#releasing;
    // A lease that ran out unwatched ends as lost, exactly as if its wake-up had come first.
    this.settle();
    const wasHeld = this.#state === 'held';
    this.#state = 'released';
    this.#stopTimers();
    this.#unwatch?.();
    if (wasHeld) this.#abort(RELEASED);
    this.#releasing = this.#ops()
      .release(this.#grant)
      .then((result) => {
        this.#host.forget(this);
        if (this.#host.observed('released')) this.#host.emit('released', { resources: this.resources, fence: this.fence, ...result });
        return result;
      });
    // The release requests are written: a waiter of this process woken now sends its attempt right behind them.
    if (wasHeld && !this.#grant.ops && this.resources.length === 1) this.#host.releasedHere(this.resources[0] as string);
    return this.#releasing;
  }

  /** `release()`, so that `await using lock = await locks.acquire('k')` releases it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release().then(() => undefined);
  }

  /**
   * @internal Auto-extension (withLock, or acquire with autoExtend): extend
   * every ttl/3. A failed round that may only be a node blip (errors, not
   * refusals) is retried while validity lasts; a refusal by enough nodes
   * loses the lock at once. Stops once the lock has been held `maxHold` ms.
   */
  keepAlive(maxHold: number): void {
    if (this.#state !== 'held') return;
    this.#autoExtend = true;
    this.#watched = true;
    this.#extendUntil = monotonicNow() + maxHold;
    this.#planExtension(this.#grant.ttl / 3);
    // A store that can say at once that the grant is gone (etcd: its key deleted) is listened to meanwhile.
    this.#unwatch = this.#ops().watchLoss?.(this.#grant, (reason) => void this.#lose(reason));
  }

  /** @internal The scheduler's wake-up: extend if due, lose the lock if its validity ran out. */
  onTimer(): void {
    this.#timer = undefined;
    if (this.#state !== 'held') return;
    const now = monotonicNow();
    if (now >= this.#grant.validUntil) {
      this.#lose('its lease ran out without an extension');
      return;
    }
    if (now >= this.#extendAt) {
      this.#extendAt = Infinity;
      this.#serialized(() => this.#extend(this.#grant.ttl, false)).then(
        (ok) => this.#planExtension(ok ? this.#grant.ttl / 3 : Math.max(10, Math.min(this.#grant.ttl / 10, this.remaining() / 3))),
        () => undefined, // already reported as lost
      );
      // The round ends within nodeTimeout and schedules the next wake-up itself. Only a lease that may run
      // out before then needs a watch meanwhile (re-arming for every round would leave a stale entry behind).
      if (this.#grant.validUntil - now > this.#host.roundTimeout + 10) return;
    }
    this.#arm();
  }

  #planExtension(delay: number): void {
    if (this.#state !== 'held' || !this.#autoExtend) return;
    const at = monotonicNow() + delay;
    // Past maxHold the lease runs out and the lock is lost, as promised.
    this.#extendAt = at < this.#extendUntil ? at : Infinity;
    this.#arm();
  }

  /** (Re)schedules the one wake-up for the earlier of the next extension and the end of validity (watched locks only). */
  #arm(): void {
    if (!this.#watched) return;
    const at = Math.min(this.#extendAt, this.#grant.validUntil);
    // An entry due no later than needed is kept: waking early costs a re-check, cancelling leaves a stale entry.
    if (this.#timer && !this.#timer.cancelled && this.#timer.at <= at) return;
    this.#stopTimers();
    if (this.#state === 'held') this.#timer = this.#host.scheduler.schedule(at, this);
  }

  /**
   * true: extended; false: inconclusive (only node errors), try again. Throws LockLostError when lost. Not strict
   * (auto-extension, the top-up), a lock released before or during the round just ends it (false): nobody waits
   * for that error, and a short hold (W4) would pay for one, stack and all, in every hand-over.
   */
  async #extend(ttl: number, strict: boolean): Promise<boolean> {
    if (this.#state === 'released') {
      if (!strict) return false;
      throw new LockLostError(this.resources, 'it was released');
    }
    if (this.#state === 'lost') throw this.#lostError as LockLostError;
    if (this.remaining() <= 0) throw this.#lose('its validity ran out before the extension');
    const outcome = await this.#ops().extend(this.#grant, ttl);
    // (The round may have changed the state meanwhile: read again, not as narrowed above.)
    if ((this.#state as State) === 'released' && !strict) return false;
    if (this.#state !== 'held') throw this.#lostError ?? new LockLostError(this.resources, 'it was released during the extension');
    if ('grant' in outcome) {
      this.#grant = outcome.grant;
      this.#validUntilWall = undefined;
      // Auto-extension arms the next wake-up itself once this round is done.
      if (!this.#autoExtend) this.#arm();
      if (this.#host.observed('extended'))
        this.#host.emit('extended', { resources: this.resources, fence: this.fence, ttl, remaining: this.remaining() });
      return true;
    }
    const { failures, extended } = outcome;
    const quorum = this.#host.quorum;
    const detail = failures.map(nodeMessage).join('; ');
    if (!strict && extended + failures.length >= quorum && this.remaining() > 0) {
      this.#host.extensionFailed('retrying');
      return false;
    }
    const reason =
      extended + failures.length >= quorum
        ? `extension reached ${extended} of ${quorum} nodes needed (${detail})`
        : `the key is gone or owned by someone else on ${this.#host.nodeCount - extended - failures.length} node(s)${detail ? ` (${detail})` : ''}`;
    this.#host.extensionFailed('lost');
    throw this.#lose(reason, failures[0]?.error);
  }

  /** Extend and release of this grant: its own (a primitive's), else the manager's mutex lease. */
  #ops(): LeaseOps {
    return this.#grant.ops ?? this.#host.lease;
  }

  #lose(reason: string, cause?: unknown): LockLostError {
    if (this.#state !== 'held') return this.#lostError ?? new LockLostError(this.resources, reason);
    const error = new LockLostError(this.resources, reason, cause === undefined ? undefined : { cause });
    this.#state = 'lost';
    this.#lostError = error;
    this.#stopTimers();
    this.#unwatch?.();
    this.#abort(error);
    this.#host.forget(this);
    this.#host.emit('lost', { resources: this.resources, fence: this.fence, error });
    // Our keys may still sit on some nodes; compare-and-delete them so waiters need not wait out the TTL.
    void this.#ops().release(this.#grant);
    return error;
  }

  #abort(reason: LockError | typeof RELEASED): void {
    this.#abortReason = reason;
    if (this.#controller) this.#controller.abort(this.#reason());
  }

  #reason(): LockError | undefined {
    if (this.#abortReason === RELEASED) this.#abortReason = new LockReleasedError(this.resources);
    return this.#abortReason;
  }

  #stopTimers(): void {
    if (this.#timer) this.#host.scheduler.cancel(this.#timer);
    this.#timer = undefined;
  }

  #wallClock(monotonic: number): number {
    return Date.now() + (monotonic - monotonicNow());
  }
}

/**
 * withLock's core, for every kind of hold: run `fn` with the lock, always release afterwards (release never
 * rejects and is bounded by nodeTimeout), and reject with the LockLostError if the lock was lost meanwhile,
 * even if `fn` resolved. If `fn` throws, its error wins.
 */
export async function runWhileHeld<T>(lock: Lock, fn: (lock: Lock) => Promise<T> | T): Promise<T> {
  let result: T;
  try {
    result = await fn(lock);
  } finally {
    await lock.release();
  }
  if (lock.lostError) throw lock.lostError;
  return result;
}
