import { EventEmitter, setMaxListeners } from 'node:events';
import type { Backend, LockInfo } from './backend.js';
import { createBackend, isRedisInput, packageFor } from './backends.js';
import { monotonicNow } from './clock.js';
import type { EtcdInput } from './etcd/index.js';
import type { ZooKeeperInput } from './zookeeper/index.js';
import { InvalidArgumentError, LockError } from './errors.js';
import type { LockEventListener, LockEventName, LockEvents } from './events.js';
import { Lock, runWhileHeld, type LockHost } from './lock.js';
import { holdGrant, type HoldHost, type PrimitiveHost } from './hold.js';
import { ReadWriteLock } from './rwlock/index.js';
import { Semaphore, type SemaphoreOptions } from './semaphore/index.js';
import { Telemetry, type ObservabilityOptions } from './observability/index.js';
import { loadOptional, PackageCheck } from './optional-package.js';
import { Scheduler } from './scheduler.js';
import {
  checkLeaseTtl,
  resolveAcquireOptions,
  resolveManagerOptions,
  resolveResources,
  resolveSingleResource,
  resolveTryAcquireOptions,
  resolveWithLockOptions,
  type AcquireOptions,
  type LockManagerOptions,
  type ResolvedAcquire,
  type ResolvedManagerOptions,
  type WithLockOptions,
} from './options.js';

export type { LockInfo } from './backend.js';

/** Below this many held locks, no sweep for leases that ran out unwatched (lock.ts): not worth a pass. */
const SWEEP_MIN = 1024;

/** A client the manager accepts as one node: ioredis Redis/Cluster, node-redis client/cluster, or a redis:// URL. */
export type RedisClientInput = string | object;

/** Thrown by calls made after `close()`. */
export class ManagerClosedError extends LockError {
  constructor() {
    super('CLOSED', 'this LockManager is closed');
  }
}

/**
 * Entry point. One client is a single-instance lock; N independent clients
 * are Redlock with quorum floor(N/2) + 1; an etcd or ZooKeeper client or URL is
 * that store's lock recipe. The protocols live behind the backend boundary
 * (src/redis/, src/etcd/, src/zookeeper/); this class validates input, tracks
 * held locks and emits events.
 */
export class LockManager {
  readonly #options: ResolvedManagerOptions;
  readonly #backend: Backend;
  readonly #scheduler = new Scheduler(monotonicNow);
  readonly #events = new EventEmitter();
  readonly #held = new Set<Lock>();
  readonly #closing = new AbortController();
  #closed: Promise<void> | undefined;
  readonly #host: LockHost;
  /** how a won grant becomes a lock this manager holds (hold.ts): the mutex and every primitive alike */
  readonly #holdHost: HoldHost;
  readonly #telemetry: Telemetry;
  /** whether the client library a URL needs is installed (a missing one fails every call at once) */
  readonly #packages: PackageCheck;
  /** reports a waiter's retry: made once, not per acquire */
  readonly #onRetry = (info: LockEvents['retry'][0]): void => this.#emit('retry', info);
  /** #held's size at which the next sweep for locks whose lease ran out unwatched is due */
  #sweepAt = SWEEP_MIN;

  /**
   * `clients`: Redis clients (ioredis, node-redis, `redis://` URLs), one per independent node; or an etcd3
   * client, or an `etcd://host:port,host:port` URL, for a lock on an etcd cluster (see docs/etcd.md); or a
   * node-zookeeper-client client, or a `zk://host:port,host:port` URL, for a ZooKeeper ensemble (docs/zookeeper.md).
   */
  constructor(clients: readonly RedisClientInput[] | EtcdInput | ZooKeeperInput, options?: LockManagerOptions & ObservabilityOptions) {
    this.#options = resolveManagerOptions(options, isRedisInput(clients));
    this.#telemetry = new Telemetry(options);
    this.#backend = createBackend(
      clients,
      options,
      this.#options,
      { emit: (event, ...args) => this.#emit(event, ...args) },
      this.#telemetry,
    );
    const needed = packageFor(clients);
    this.#packages = new PackageCheck(needed && loadOptional(needed.name, needed.neededBy));
    this.#events.setMaxListeners(0);
    // Every waiting acquire listens on this signal: many waiters are normal, not a leak.
    setMaxListeners(0, this.#closing.signal);
    const held = this.#held;
    const telemetry = this.#telemetry;
    const backend = this.#backend;
    this.#host = {
      lease: backend.lease,
      nodeCount: backend.nodeCount,
      quorum: backend.quorum,
      roundTimeout: backend.roundTimeout,
      checkTtl: (ttl) => checkLeaseTtl(ttl, this.#options),
      releasedHere: (resource) => backend.releasedHere(resource),
      scheduler: this.#scheduler,
      observed: (event) => this.#observed(event),
      emit: (event, ...args) => this.#emit(event, ...args),
      // Only the first forget of a held lock ends it: a lost lock is forgotten again by its later release().
      forget: (lock) => {
        if (held.delete(lock)) telemetry.lockEnded(lock);
      },
      extensionFailed: (outcome) => telemetry.extensionFailed(outcome),
    };
    this.#holdHost = {
      lockHost: this.#host,
      options: this.#options,
      closing: this.#closing.signal,
      packages: this.#packages,
      track: (lock) => {
        held.add(lock);
        // Its loss is watched as it happens only if a meter, a diagnostics subscriber or a listener would see it.
        if (telemetry.lockAcquired(lock) || this.#events.listenerCount('lost') > 0) lock.watch();
        if (held.size >= this.#sweepAt) this.#sweep();
      },
    };
  }

  /** Nodes needed for a quorum: floor(N/2) + 1. */
  get quorum(): number {
    return this.#backend.quorum;
  }

  /** The resolved options, defaults filled in. */
  get options(): ResolvedManagerOptions {
    return this.#options;
  }

  /** Waits until the lock is held, `timeout` passes (LockTimeoutError) or `signal` aborts. */
  acquire(resource: string | readonly string[], opts?: AcquireOptions): Promise<Lock> {
    // No closure for #start here: the common call makes none before it reaches the backend.
    if (this.#closing.signal.aborted) return Promise.reject(new ManagerClosedError());
    let resources: readonly string[];
    let o: ResolvedAcquire;
    try {
      resources = resolveResources(resource);
      o = resolveAcquireOptions(opts, this.#options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#telemetry.quiet) return this.#acquire(resources, o);
    return this.#telemetry.acquire('acquire', resources, o, () => this.#acquire(resources, o));
  }

  /** One attempt, no waiting: null when another owner holds it; QuorumError when nodes failed. */
  tryAcquire(resource: string | readonly string[], opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    return this.#start(() => {
      const resources = resolveResources(resource);
      const o = resolveTryAcquireOptions(opts, this.#options);
      return this.#telemetry.acquire('tryAcquire', resources, o, () => this.#tryAcquire(resources, o));
    });
  }

  async #tryAcquire(resources: readonly string[], o: ResolvedAcquire): Promise<Lock | null> {
    try {
      return await this.#acquire(resources, o);
    } catch (error) {
      if (error instanceof LockError && error.code === 'ACQUIRE_TIMEOUT') return null;
      throw error;
    }
  }

  /**
   * Acquire, run `fn` while the lease is kept extended, always release. If the
   * lock is lost meanwhile, `lock.signal` aborts at once and this rejects with
   * the LockLostError even if `fn` resolved. If `fn` throws, this rejects with fn's error.
   */
  withLock<T>(resource: string | readonly string[], fn: (lock: Lock) => Promise<T> | T, opts?: WithLockOptions): Promise<T> {
    return this.#start(async () => {
      const resources = resolveResources(resource);
      const o = resolveWithLockOptions(opts, this.#options);
      if (typeof fn !== 'function') throw new InvalidArgumentError('withLock needs a function to run under the lock');
      const telemetry = this.#telemetry;
      const lock = await (telemetry.quiet
        ? this.#acquire(resources, o)
        : telemetry.acquire('withLock', resources, o, () => this.#acquire(resources, o)));
      return runWhileHeld(lock, fn);
    });
  }

  /** Per node: holder, remaining ms, waiters, fence counter and data state (restart quarantine), or the node's error. Read-only. */
  inspect(resource: string): Promise<LockInfo> {
    return this.#start(() => this.#backend.inspect(resolveSingleResource(resource)));
  }

  /** Admin: delete the lock on every node whoever holds it. Resolves with how many nodes had it. */
  forceRelease(resource: string): Promise<number> {
    return this.#start(() => this.#backend.forceRelease(resolveSingleResource(resource)));
  }

  /** Stops timers and subscriptions, releases locks this manager still holds, closes only the connections it created. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort(new ManagerClosedError());
      await Promise.all([...this.#held].map((lock) => lock.release()));
      await this.#backend.close();
      this.#scheduler.stop();
    })();
    return this.#closed;
  }

  /** `close()`, so that `await using locks = new LockManager(…)` closes it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Listens to an event; see {@link LockEvents} for the names and payloads. */
  on<E extends LockEventName>(event: E, listener: LockEventListener<E>): this {
    this.#events.on(event, listener as (...args: unknown[]) => void);
    if (event === 'lost') this.#watchHeld();
    return this;
  }

  /** Listens to the next occurrence of an event only. */
  once<E extends LockEventName>(event: E, listener: LockEventListener<E>): this {
    this.#events.once(event, listener as (...args: unknown[]) => void);
    if (event === 'lost') this.#watchHeld();
    return this;
  }

  /** Stops listening. */
  off<E extends LockEventName>(event: E, listener: LockEventListener<E>): this {
    this.#events.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  #acquire(resources: readonly string[], o: ResolvedAcquire): Promise<Lock> {
    return holdGrant(this.#holdHost, o, (signal) => this.#backend.acquire(resources, o, signal, this.#onRetry));
  }

  /** A 'lost' listener now exists: locks held unwatched so far must report their loss as it happens, too. */
  #watchHeld(): void {
    for (const lock of this.#held) lock.watch();
  }

  /**
   * Locks whose lease ran out while nobody watched them stay in #held until their next use. Sweeping them
   * out whenever #held has doubled since the last sweep keeps it within twice the locks really held, at
   * amortised constant cost per acquire, with no timer.
   */
  #sweep(): void {
    for (const lock of this.#held) lock.settle();
    this.#sweepAt = Math.max(SWEEP_MIN, 2 * this.#held.size);
  }

  /** A counting semaphore over this manager's nodes: at most `limit` permits held at once. InvalidArgumentError on bad input. */
  semaphore(name: string, opts: SemaphoreOptions): Semaphore {
    return new Semaphore(this.#primitiveHost(), name, opts);
  }

  /** A read-write lock over this manager's nodes (writer preference). InvalidArgumentError on a bad name. */
  readWriteLock(name: string): ReadWriteLock {
    return new ReadWriteLock(this.#primitiveHost(), name);
  }

  #primitives: PrimitiveHost | undefined;
  #primitiveHost(): PrimitiveHost {
    this.#primitives ??= { ...this.#holdHost, backend: this.#backend };
    return this.#primitives;
  }

  /** Runs an API call: a closed manager and bad input reject before any network call. */
  #start<T>(call: () => Promise<T>): Promise<T> {
    // Not an async function: a held withLock would keep one more suspended frame alive per lock.
    if (this.#closing.signal.aborted) return Promise.reject(new ManagerClosedError());
    const packages = this.#packages.wait();
    if (packages) return packages.then(() => this.#start(call));
    try {
      return call();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A listener, a diagnostics subscriber or a meter would see `event`: only then is its payload worth building. */
  #observed(event: LockEventName): boolean {
    return this.#events.listenerCount(event) > 0 || this.#telemetry.observes(event);
  }

  #emit<E extends LockEventName>(event: E, ...args: LockEvents[E]): void {
    this.#telemetry.event(event, args[0]);
    this.#events.emit(event, ...args);
  }
}
