// In-process coalescing of a manager's callers of one mutex (one resource), as on Redis (src/redis/local-queue.ts).
// At most one caller of the line is at etcd at a time: the holder, or the one waiting in etcd's queue (the
// contender). The others wait here in arrival order, each with its own timeout and signal, and cost etcd nothing.
//
// A release hands the lock to the line's next caller with one write and no enqueue: a transaction that puts
// the held key again, on the same lease, with the next caller's token, only if no other key is in the queue
// (compare: every key of the queue was created no later than ours). Its revision is the next holder's fence: a
// revision at which its key exists and is first in the queue, so inside its turn (docs/fencing.md). The key
// keeps its create revision, so a waiter that queued meanwhile stays behind it. When another key is queued (a
// waiter of another process, an `etcdctl lock`, a multi-resource lock of this one), or the next caller asks for
// another lease length, the release deletes the key as usual, and the next caller goes to etcd's queue behind
// whoever queued there: exactly then a caller of this process is served after a foreign waiter that queued
// later than the caller called acquire (a process's callers are one waiter in etcd's queue, as on Redis).
//
// A holder that never releases (its lease runs out, it is lost unwatched) does not block its line: once the
// holder's validity has passed, the next caller goes to etcd's queue and waits there as any waiter would.
import type { RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError } from '../errors.js';
import type { ResolvedAcquire } from '../options.js';
import { MAX_DELAY, type EtcdGrant } from './recipe.js';

/** The etcd acquire of one caller (the recipe's, bound to the manager's store). */
export type StoreAcquire = (o: ResolvedAcquire, signal: AbortSignal, onRetry: (info: RetryInfo) => void) => Promise<WaitResult>;

/** The hand-over write: the held grant's key put again for `next` (its token, its ttl), or null when another key is queued. */
export type PassOn = (held: EtcdGrant, next: { readonly token: string; readonly ttl: number }) => Promise<EtcdGrant | null>;

/** A caller waiting in the process. */
interface Caller {
  readonly o: ResolvedAcquire;
  readonly signal: AbortSignal;
  readonly onRetry: (info: RetryInfo) => void;
  readonly arrived: number;
  readonly resolve: (result: WaitResult) => void;
  readonly reject: (error: unknown) => void;
  readonly stop: () => void;
  /** it timed out or was aborted (and rejected) */
  gaveUp: boolean;
}

/** The callers of this process for one resource. */
interface Line {
  /** the token of the line's caller that holds (undefined: none holds) */
  holder: string | undefined;
  /** a caller of the line is in etcd's queue, not yet holding */
  contending: boolean;
  readonly waiting: Caller[];
  /** ends the wait for the holder's validity to pass */
  park: NodeJS.Timeout | undefined;
  /** the holder's validity has passed: the next caller goes to etcd's queue (see above) */
  parked: boolean;
}

export class LocalLines {
  readonly #lines = new Map<string, Line>();

  constructor(
    private readonly storeAcquire: (resource: string) => StoreAcquire,
    private readonly passOn: PassOn,
    private readonly newToken: () => string,
  ) {}

  /** acquire() of a mutex on `resource`: at etcd at once when no caller of this process is there, else in line. */
  acquire(resource: string, o: ResolvedAcquire, signal: AbortSignal, onRetry: (info: RetryInfo) => void): Promise<WaitResult> {
    let line = this.#lines.get(resource);
    if (!line) {
      line = { holder: undefined, contending: false, waiting: [], park: undefined, parked: false };
      this.#lines.set(resource, line);
    }
    const arrived = monotonicNow();
    if (line.holder === undefined && !line.contending) return this.#contend(resource, line, o, signal, onRetry, arrived);
    const joined = line;
    return new Promise<WaitResult>((resolve, reject) => {
      const leave = (error: unknown): void => {
        caller.gaveUp = true;
        const at = joined.waiting.indexOf(caller);
        if (at >= 0) joined.waiting.splice(at, 1);
        caller.stop();
        reject(error);
        this.#forgetIfIdle(resource, joined);
      };
      if (signal.aborted) return reject(signal.reason);
      const onAbort = (): void => leave(signal.reason);
      // No timer for a wait longer than setTimeout takes (Infinity: until the signal aborts).
      const timer =
        o.timeout <= MAX_DELAY
          ? setTimeout(() => leave(new LockTimeoutError([resource], o.timeout, 'held by others')), o.timeout)
          : undefined;
      const caller: Caller = {
        o,
        signal,
        onRetry,
        arrived,
        resolve,
        reject,
        stop: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        },
        gaveUp: false,
      };
      signal.addEventListener('abort', onAbort, { once: true });
      joined.waiting.push(caller);
    });
  }

  /**
   * Before the release of `grant`: hands the lock to the line's next caller when it can (undefined: released
   * and handed over, nothing else to do). Else the grant to release as usual (`grant`, or the one a caller
   * was handed as it gave up), after which the caller calls `released`.
   */
  async handOver(resource: string, grant: EtcdGrant): Promise<EtcdGrant | undefined> {
    const line = this.#lines.get(resource);
    if (!line || line.holder !== grant.token) return grant;
    clearTimeout(line.park);
    line.parked = false;
    // Bounded: each pass serves or drops one caller of the line.
    for (let held = grant; ;) {
      line.holder = undefined;
      const next = line.waiting[0];
      if (!next || line.contending || Math.ceil(next.o.ttl / 1000) !== held.leaseAsked) return held;
      const token = this.newToken();
      line.holder = token; // nobody else takes the line meanwhile
      line.waiting.shift();
      const passed = await this.passOn(held, { token, ttl: next.o.ttl }).catch(() => null);
      if (!passed) {
        line.holder = undefined;
        if (!next.gaveUp) line.waiting.unshift(next); // first in line still: it goes to etcd after the release
        return held;
      }
      if (next.gaveUp) {
        held = passed; // it timed out or was aborted while the write was on its way: on to the next, or released
        continue;
      }
      next.stop();
      this.#parkUntil(resource, line, passed.validUntil);
      const waited = monotonicNow() - next.arrived;
      next.onRetry({ resources: [resource], attempt: 1, reason: 'notified', waited });
      next.resolve({ grant: passed, attempts: 1, waited });
      return undefined;
    }
  }

  /** The release of the line's holder is done (not handed over): the next caller goes to etcd. */
  released(resource: string): void {
    const line = this.#lines.get(resource);
    if (line) this.#next(resource, line);
  }

  #contend(
    resource: string,
    line: Line,
    o: ResolvedAcquire,
    signal: AbortSignal,
    onRetry: (info: RetryInfo) => void,
    arrived: number,
  ): Promise<WaitResult> {
    line.contending = true;
    return this.storeAcquire(resource)(o, signal, onRetry).then(
      (won) => {
        line.contending = false;
        line.holder = (won.grant as EtcdGrant).token;
        this.#parkUntil(resource, line, won.grant.validUntil);
        return { ...won, waited: monotonicNow() - arrived };
      },
      (error: unknown) => {
        line.contending = false;
        this.#next(resource, line);
        throw error;
      },
    );
  }

  /** The next caller in line to etcd, when none of the line is there (or the holder's validity has passed). */
  #next(resource: string, line: Line): void {
    if (line.contending || (line.holder !== undefined && !line.parked)) return;
    const caller = line.waiting.shift();
    if (!caller) return this.#forgetIfIdle(resource, line);
    caller.stop();
    const left = caller.o.timeout - (monotonicNow() - caller.arrived);
    this.#contend(resource, line, { ...caller.o, timeout: Math.max(0, left) }, caller.signal, caller.onRetry, caller.arrived).then(
      caller.resolve,
      caller.reject,
    );
  }

  /** While the holder's validity lasts, its line waits here; then the next caller goes to etcd's queue. */
  #parkUntil(resource: string, line: Line, validUntil: number): void {
    clearTimeout(line.park);
    line.parked = false;
    line.park = setTimeout(
      () => {
        line.parked = true;
        this.#next(resource, line);
      },
      Math.max(0, validUntil - monotonicNow()),
    );
    line.park.unref();
  }

  #forgetIfIdle(resource: string, line: Line): void {
    // A holder whose validity has passed no longer keeps its line: should it still hold (extended), its
    // release finds no line and releases as usual, and a new caller waits in etcd's queue behind it.
    const idle = (line.holder === undefined || line.parked) && !line.contending && line.waiting.length === 0;
    if (idle && this.#lines.get(resource) === line) this.#lines.delete(resource);
  }
}
