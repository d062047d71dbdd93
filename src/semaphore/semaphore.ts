import type { Win } from '../backend.js';
import { acquireHold, tryHold, withHold, type PrimitiveHost } from '../hold.js';
import { InvalidArgumentError } from '../errors.js';
import type { Lock } from '../lock.js';
import { resolveSingleResource, show, type AcquireOptions, type WithLockOptions } from '../options.js';

/** Options of `locks.semaphore(name, options)`. */
export interface SemaphoreOptions {
  /** how many permits may be held at once: an integer in [1, 2^31 - 1] */
  limit: number;
}

const MAX_LIMIT = 2 ** 31 - 1;

/**
 * A counting semaphore: at most `limit` holders at once. Each permit is a
 * lease of its own (a crashed holder's permit comes back when its lease ends),
 * with an owner token, a fence from the name's counter, extension, loss and
 * `signal` exactly as a mutex `Lock` (it is one). On N nodes a permit needs a
 * quorum. Made by `LockManager.semaphore(name, { limit })`; see
 * docs/semaphores-and-rwlocks.md.
 *
 * The limit is checked when a permit is taken: a semaphore object with a
 * smaller limit evicts nobody, it only admits new holders while fewer than its
 * limit hold a permit.
 */
export class Semaphore {
  /** the semaphore's name (its keys' hash tag) */
  readonly name: string;
  /** how many permits may be held at once */
  readonly limit: number;
  readonly #host: PrimitiveHost;

  /** @internal Created by LockManager.semaphore. */
  constructor(host: PrimitiveHost, name: string, opts: SemaphoreOptions) {
    this.name = resolveSingleResource(name);
    if (opts === null || typeof opts !== 'object') throw new InvalidArgumentError(`semaphore options must be an object, got ${show(opts)}`);
    const { limit } = opts;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      throw new InvalidArgumentError(`limit must be an integer in [1, ${MAX_LIMIT}], got ${show(limit)}`);
    this.limit = limit;
    this.#host = host;
  }

  /** Waits for a permit: LockTimeoutError after `timeout`, the signal's reason when it aborts, QuorumError when nodes fail. */
  acquire(opts?: AcquireOptions): Promise<Lock> {
    return acquireHold(this.#host, this.#request(), opts);
  }

  /** One attempt: null when `limit` permits are held; QuorumError when nodes failed. */
  tryAcquire(opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    return tryHold(this.#host, this.#request(), opts);
  }

  /** Acquire a permit, run `fn` with its lease kept extended, always release; LockLostError if it was lost meanwhile. */
  withPermit<T>(fn: (permit: Lock) => Promise<T> | T, opts?: WithLockOptions): Promise<T> {
    return withHold(this.#host, this.#request(), fn, opts);
  }

  #request(): Win {
    return this.#host.backend.semaphore(this.name, this.limit);
  }
}
