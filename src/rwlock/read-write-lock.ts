import type { Win } from '../backend.js';
import { acquireHold, tryHold, withHold, type PrimitiveHost } from '../hold.js';
import type { Lock } from '../lock.js';
import { resolveSingleResource, type AcquireOptions, type WithLockOptions } from '../options.js';

/**
 * A read-write lock: many readers or one writer. Writer preference: a writer
 * that waits registers a write intent (with a lease its retries renew), and
 * while a live intent exists new readers are refused; readers already in
 * finish. So a stream of readers cannot starve a writer. Each read or write
 * hold is a `Lock`: a lease with an owner token, a fence (reads and writes
 * share the name's counter), extension, loss and `signal`. On N nodes a hold
 * needs a quorum. Made by `LockManager.readWriteLock(name)`; see
 * docs/semaphores-and-rwlocks.md.
 */
export class ReadWriteLock {
  /** the lock's name (its keys' hash tag) */
  readonly name: string;
  readonly #host: PrimitiveHost;

  /** @internal Created by LockManager.readWriteLock. */
  constructor(host: PrimitiveHost, name: string) {
    this.name = resolveSingleResource(name);
    this.#host = host;
  }

  /** Waits for a read hold (shared with other readers). */
  read(opts?: AcquireOptions): Promise<Lock> {
    return acquireHold(this.#host, this.#request('read'), opts);
  }

  /** Waits for the write hold (exclusive); registers a write intent while it waits. */
  write(opts?: AcquireOptions): Promise<Lock> {
    return acquireHold(this.#host, this.#request('write'), opts);
  }

  /** One attempt at a read hold: null when a writer holds it or waits for it. */
  tryRead(opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    return tryHold(this.#host, this.#request('read'), opts);
  }

  /** One attempt at the write hold: null when readers or a writer hold it. Registers no intent. */
  tryWrite(opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    return tryHold(this.#host, this.#request('write'), opts);
  }

  /** Read hold around `fn`, kept extended while it runs, always released; LockLostError if lost meanwhile. */
  withRead<T>(fn: (lock: Lock) => Promise<T> | T, opts?: WithLockOptions): Promise<T> {
    return withHold(this.#host, this.#request('read'), fn, opts);
  }

  /** Write hold around `fn`, kept extended while it runs, always released; LockLostError if lost meanwhile. */
  withWrite<T>(fn: (lock: Lock) => Promise<T> | T, opts?: WithLockOptions): Promise<T> {
    return withHold(this.#host, this.#request('write'), fn, opts);
  }

  #request(mode: 'read' | 'write'): Win {
    return this.#host.backend.readWrite(this.name, mode);
  }
}
