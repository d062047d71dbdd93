import { monotonicNow } from './clock.js';
import type { Cancel, Scheduler } from './algorithm/scheduler.js';
import type { Grant, Redlock } from './algorithm/redlock.js';
import { LockError, LockLostError, nodeMessage } from './errors.js';
import type { LockEvents } from './events.js';
import { checkLeaseTtl } from './options.js';

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

/** What a Lock needs from its manager. */
export interface LockHost {
  readonly redlock: Redlock;
  readonly scheduler: Scheduler;
  emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void;
  forget(lock: Lock): void;
}

type State = 'held' | 'released' | 'lost';

/**
 * A held lock. Its lease is only trusted through `remaining()`, computed on
 * the monotonic clock with drift already subtracted; when that runs out
 * without an extension the lock counts as lost, and `signal` aborts at once.
 */
export class Lock implements AsyncDisposable {
  readonly resources: readonly string[];
  readonly value: string;
  readonly fence: bigint;
  readonly signal: AbortSignal;
  #grant: Grant;
  #state: State = 'held';
  #lostError: LockLostError | undefined;
  #validUntilWall: number;
  readonly #host: LockHost;
  readonly #controller = new AbortController();
  #cancelExpiry: Cancel | undefined;
  #cancelKeepAlive: Cancel | undefined;
  #extending: Promise<unknown> = Promise.resolve();
  #releasing: Promise<ReleaseResult> | undefined;

  /** @internal Created by LockManager. */
  constructor(host: LockHost, grant: Grant) {
    this.#host = host;
    this.#grant = grant;
    this.resources = grant.resources;
    this.value = grant.token;
    this.fence = grant.fence;
    this.signal = this.#controller.signal;
    this.#validUntilWall = this.#wallClock(grant.validUntil);
    this.#watchExpiry();
  }

  /** Wall-clock estimate (epoch ms) of the end of guaranteed validity, for display only. */
  get validUntil(): number {
    return this.#validUntilWall;
  }

  /** ms of guaranteed validity left; 0 once lost or released. */
  remaining(): number {
    if (this.#state !== 'held') return 0;
    return Math.max(0, this.#grant.validUntil - monotonicNow());
  }

  isValid(): boolean {
    return this.remaining() > 0;
  }

  /** @internal The error the lock was lost with, if it was. */
  get lostError(): LockLostError | undefined {
    return this.#lostError;
  }

  /** Extend the lease to `ttl` ms from now on a quorum of nodes; on failure the lock is lost and this rejects with LockLostError. */
  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.#grant.ttl : checkLeaseTtl(ttl, this.#host.redlock.options);
    const run = this.#extending.then(() => this.#extend(next, true));
    this.#extending = run.catch(() => undefined);
    await run;
  }

  /** Compare-and-delete on all nodes: never deletes another owner's key. Idempotent; never rejects. */
  release(): Promise<ReleaseResult> {
    if (this.#releasing) return this.#releasing;
    const wasHeld = this.#state === 'held';
    this.#state = 'released';
    this.#stopTimers();
    if (wasHeld) this.#controller.abort(new LockReleasedError(this.resources));
    this.#releasing = this.#host.redlock.release(this.#grant).then((result) => {
      this.#host.forget(this);
      this.#host.emit('released', { resources: this.resources, fence: this.fence, ...result });
      return result;
    });
    return this.#releasing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release().then(() => undefined);
  }

  /**
   * @internal Auto-extension for withLock: extend every ttl/3. A failed round
   * that may only be a node blip (errors, not refusals) is retried while
   * validity lasts; a refusal by enough nodes loses the lock at once.
   * Stops extending once the lock has been held `maxHold` ms.
   */
  keepAlive(maxHold: number): Cancel {
    const acquiredAt = monotonicNow();
    const schedule = (delay: number): void => {
      if (this.#state !== 'held') return;
      const at = monotonicNow() + delay;
      if (at - acquiredAt >= maxHold) return; // the lease then runs out and the lock is lost, as promised
      this.#cancelKeepAlive = this.#host.scheduler.at(at, () => {
        this.#cancelKeepAlive = undefined;
        const round = this.#extending.then(() => this.#extend(this.#grant.ttl, false));
        this.#extending = round.catch(() => undefined);
        round.then(
          (ok) => schedule(ok ? this.#grant.ttl / 3 : Math.max(10, Math.min(this.#grant.ttl / 10, this.remaining() / 3))),
          () => undefined, // already reported as lost
        );
      });
    };
    schedule(this.#grant.ttl / 3);
    return () => {
      this.#cancelKeepAlive?.();
      this.#cancelKeepAlive = undefined;
    };
  }

  /** true: extended; false: inconclusive (only node errors), try again. Throws LockLostError when lost. */
  async #extend(ttl: number, strict: boolean): Promise<boolean> {
    if (this.#state === 'released') throw new LockLostError(this.resources, 'it was released');
    if (this.#state === 'lost') throw this.#lostError as LockLostError;
    if (this.remaining() <= 0) throw this.#lose('its validity ran out before the extension');
    const outcome = await this.#host.redlock.extend(this.#grant, ttl);
    if (this.#state !== 'held') throw this.#lostError ?? new LockLostError(this.resources, 'it was released during the extension');
    if ('grant' in outcome) {
      this.#grant = outcome.grant;
      this.#validUntilWall = this.#wallClock(outcome.grant.validUntil);
      this.#watchExpiry();
      this.#host.emit('extended', { resources: this.resources, fence: this.fence, ttl, remaining: this.remaining() });
      return true;
    }
    const { failures, extended } = outcome;
    const quorum = this.#host.redlock.quorum;
    const detail = failures.map(nodeMessage).join('; ');
    if (!strict && extended + failures.length >= quorum && this.remaining() > 0) return false;
    const reason =
      extended + failures.length >= quorum
        ? `extension reached ${extended} of ${quorum} nodes needed (${detail})`
        : `the key is gone or owned by someone else on ${this.#host.redlock.nodes.length - extended - failures.length} node(s)${detail ? ` (${detail})` : ''}`;
    throw this.#lose(reason, failures[0]?.error);
  }

  #lose(reason: string, cause?: unknown): LockLostError {
    if (this.#state !== 'held') return this.#lostError ?? new LockLostError(this.resources, reason);
    const error = new LockLostError(this.resources, reason, cause === undefined ? undefined : { cause });
    this.#state = 'lost';
    this.#lostError = error;
    this.#stopTimers();
    this.#controller.abort(error);
    this.#host.forget(this);
    this.#host.emit('lost', { resources: this.resources, fence: this.fence, error });
    // Our keys may still sit on some nodes; compare-and-delete them so waiters need not wait out the TTL.
    void this.#host.redlock.release(this.#grant);
    return error;
  }

  #watchExpiry(): void {
    this.#cancelExpiry?.();
    this.#cancelExpiry = this.#host.scheduler.at(this.#grant.validUntil, () => {
      this.#cancelExpiry = undefined;
      if (this.#state === 'held' && this.remaining() <= 0) this.#lose('its lease ran out without an extension');
      else if (this.#state === 'held') this.#watchExpiry();
    });
  }

  #stopTimers(): void {
    this.#cancelExpiry?.();
    this.#cancelKeepAlive?.();
    this.#cancelExpiry = this.#cancelKeepAlive = undefined;
  }

  #wallClock(monotonic: number): number {
    return Date.now() + (monotonic - monotonicNow());
  }
}
