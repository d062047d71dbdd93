import { EventEmitter, setMaxListeners } from 'node:events';
import { toNodes, type RedisNode } from './adapters/index.js';
import { forceRelease, inspect } from './algorithm/admin.js';
import { ReleaseNotifications } from './algorithm/notifications.js';
import { Redlock } from './algorithm/redlock.js';
import type { NodeView } from './algorithm/replies.js';
import { Scheduler } from './algorithm/scheduler.js';
import { acquireWaiting } from './algorithm/wait.js';
import { monotonicNow } from './clock.js';
import { InvalidArgumentError, LockError, QuorumError } from './errors.js';
import type { LockEventListener, LockEventName, LockEvents } from './events.js';
import { Lock, runWhileHeld, type LockHost } from './lock.js';
import { holdGrant, primitiveHost, type HoldHost, type PrimitiveHost } from './hold.js';
import { ReadWriteLock } from './rwlock/index.js';
import { Semaphore, type SemaphoreOptions } from './semaphore/index.js';
import { Telemetry, type ObservabilityOptions } from './observability/index.js';
import {
  checkLeaseTtl,
  resolveAcquireOptions,
  resolveManagerOptions,
  resolveResources,
  resolveSingleResource,
  resolveWithLockOptions,
  type AcquireOptions,
  type LockManagerOptions,
  type ResolvedAcquire,
  type ResolvedManagerOptions,
  type WithLockOptions,
} from './options.js';

/** What `inspect` reports for one resource. */
export interface LockInfo {
  /** the resource inspected */
  readonly resource: string;
  /** nodes needed for a quorum */
  readonly quorum: number;
  /** the owner token a quorum of nodes agrees on, or null */
  readonly holder: string | null;
  /** the largest fence counter any node reported */
  readonly fence: bigint;
  /** what each node said, in the order the clients were given */
  readonly nodes: readonly NodeView[];
}

/** A client the manager accepts as one node: ioredis Redis/Cluster, node-redis client/cluster, or a redis:// URL. */
export type RedisClientInput = string | object;

/**
 * Connection errors repeat on every reconnect attempt while a node is down:
 * report a new message at once, the same one at most once a second.
 */
function connectionErrorReporter(node: RedisNode, emit: (payload: LockEvents['nodeError'][0]) => void): (error: Error) => void {
  let last = '';
  let lastAt = -Infinity;
  return (error) => {
    const now = monotonicNow();
    if (error.message === last && now - lastAt < 1_000) return;
    last = error.message;
    lastAt = now;
    emit({ node: node.name, error, operation: 'connection', resources: [] });
  };
}

/** Thrown by calls made after `close()`. */
export class ManagerClosedError extends LockError {
  constructor() {
    super('CLOSED', 'this LockManager is closed');
  }
}

/**
 * Entry point. One client is a single-instance lock; N independent clients
 * are Redlock with quorum floor(N/2) + 1. The protocol itself lives in
 * src/algorithm/; this class validates input, tracks held locks and emits events.
 */
export class LockManager {
  readonly #options: ResolvedManagerOptions;
  readonly #nodes: RedisNode[];
  readonly #redlock: Redlock;
  readonly #notifications: ReleaseNotifications;
  readonly #scheduler = new Scheduler(monotonicNow);
  readonly #events = new EventEmitter();
  readonly #held = new Set<Lock>();
  readonly #closing = new AbortController();
  #closed: Promise<void> | undefined;
  readonly #host: LockHost;
  /** how a won grant becomes a lock this manager holds (hold.ts): the mutex and every primitive alike */
  readonly #holdHost: HoldHost;
  readonly #telemetry: Telemetry;

  constructor(clients: readonly RedisClientInput[], options?: LockManagerOptions & ObservabilityOptions) {
    this.#options = resolveManagerOptions(options);
    this.#telemetry = new Telemetry(options);
    this.#nodes = toNodes(clients);
    if (this.#options.waitForReplicas && this.#nodes.some((n) => !n.canWaitForReplicas))
      throw new InvalidArgumentError(
        'waitForReplicas needs to send WAIT to the master of each key: not possible through an ioredis Cluster client (use node-redis createCluster, or standalone primaries)',
      );
    this.#redlock = new Redlock(this.#nodes, this.#options, {
      nodeError: (node, error, operation, resources) => this.#emit('nodeError', { node: node.name, error, operation, resources }),
      nodeQuarantined: (node, left) => {
        this.#telemetry.nodeQuarantined(node.name);
        this.#emit('nodeQuarantined', { node: node.name, until: Date.now() + left });
      },
      nodeRepaired: (node, countersRaised, ms) => {
        this.#telemetry.nodeRepaired(node.name, ms);
        this.#emit('nodeRepaired', { node: node.name, countersRaised, ms });
      },
    });
    const repairs = this.#redlock.repairs;
    this.#telemetry.watchUntrusted(() => repairs.untrusted);
    this.#notifications = new ReleaseNotifications(this.#nodes, this.#options.nodeTimeout);
    for (const node of this.#nodes) node.onConnectionError = connectionErrorReporter(node, (error) => this.#emit('nodeError', error));
    this.#events.setMaxListeners(0);
    // Every waiting acquire listens on this signal: many waiters are normal, not a leak.
    setMaxListeners(0, this.#closing.signal);
    const held = this.#held;
    const telemetry = this.#telemetry;
    const redlock = this.#redlock;
    this.#host = {
      lease: redlock,
      nodeCount: redlock.nodes.length,
      quorum: redlock.quorum,
      roundTimeout: this.#options.nodeTimeout,
      checkTtl: (ttl) => checkLeaseTtl(ttl, this.#options),
      releasedHere: (resource) => redlock.localWaiters.released(resource, redlock.nodes.length),
      scheduler: this.#scheduler,
      emit: (event, ...args) => this.#emit(event, ...args),
      // Only the first forget of a held lock ends it: a lost lock is forgotten again by its later release().
      forget: (lock) => {
        if (held.delete(lock)) telemetry.lockEnded(lock);
      },
      extensionFailed: (outcome) => telemetry.extensionFailed(outcome),
    };
    this.#holdHost = {
      lockHost: this.#host,
      closing: this.#closing.signal,
      track: (lock) => {
        held.add(lock);
        telemetry.lockAcquired(lock);
      },
    };
  }

  /** Nodes needed for a quorum: floor(N/2) + 1. */
  get quorum(): number {
    return this.#redlock.quorum;
  }

  /** The resolved options, defaults filled in. */
  get options(): ResolvedManagerOptions {
    return this.#options;
  }

  /** Waits until the lock is held, `timeout` passes (LockTimeoutError) or `signal` aborts. */
  acquire(resource: string | readonly string[], opts?: AcquireOptions): Promise<Lock> {
    return this.#start(() => {
      const resources = resolveResources(resource);
      const o = resolveAcquireOptions(opts, this.#options);
      return this.#telemetry.acquire('acquire', resources, o, () => this.#acquire(resources, o));
    });
  }

  /** One attempt, no waiting: null when another owner holds it; QuorumError when nodes failed. */
  tryAcquire(resource: string | readonly string[], opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    return this.#start(() => {
      const resources = resolveResources(resource);
      const o = { ...resolveAcquireOptions(opts, this.#options), timeout: 0 };
      return this.#telemetry.acquire('tryAcquire', resources, o, async () => {
        try {
          return await this.#acquire(resources, o);
        } catch (error) {
          if (error instanceof LockError && error.code === 'ACQUIRE_TIMEOUT') return null;
          throw error;
        }
      });
    });
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
      const lock = await this.#telemetry.acquire('withLock', resources, o, () => this.#acquire(resources, o));
      return runWhileHeld(lock, fn);
    });
  }

  /** Per node: holder, remaining ms, waiters, fence counter and data state (restart quarantine), or the node's error. Read-only. */
  inspect(resource: string): Promise<LockInfo> {
    return this.#start(async () => {
      const name = resolveSingleResource(resource);
      const nodes = await inspect(this.#redlock, name);
      const votes = new Map<string, number>();
      for (const n of nodes) if (n.owner !== null) votes.set(n.owner, (votes.get(n.owner) ?? 0) + 1);
      const holder = [...votes].find(([, count]) => count >= this.quorum)?.[0] ?? null;
      const fence = nodes.reduce((max, n) => (n.fence !== null && n.fence > max ? n.fence : max), 0n);
      return { resource: name, quorum: this.quorum, holder, fence, nodes };
    });
  }

  /** Admin: delete the lock on every node whoever holds it. Resolves with how many nodes had it. */
  forceRelease(resource: string): Promise<number> {
    return this.#start(async () => {
      const name = resolveSingleResource(resource);
      const { deleted, failures } = await forceRelease(this.#redlock, name);
      const answered = this.#nodes.length - failures.length;
      if (answered < this.quorum) throw new QuorumError([name], 'forceRelease', answered, this.quorum, failures);
      return deleted;
    });
  }

  /** Stops timers and subscriptions, releases locks this manager still holds, closes only the connections it created. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort(new ManagerClosedError());
      await Promise.all([...this.#held].map((lock) => lock.release()));
      // Waiters that close() interrupted leave their queues first: their places would block others until they lapse.
      await this.#redlock.settle();
      await this.#redlock.repairs.close();
      this.#scheduler.stop();
      this.#notifications.clear();
      await Promise.all(this.#nodes.map((node) => node.close().catch(() => undefined)));
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
    return this;
  }

  /** Listens to the next occurrence of an event only. */
  once<E extends LockEventName>(event: E, listener: LockEventListener<E>): this {
    this.#events.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** Stops listening. */
  off<E extends LockEventName>(event: E, listener: LockEventListener<E>): this {
    this.#events.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  #acquire(resources: readonly string[], o: ResolvedAcquire): Promise<Lock> {
    return holdGrant(this.#holdHost, o, (signal) =>
      acquireWaiting(this.#redlock, this.#notifications, resources, o, signal, (info) => this.#emit('retry', info)),
    );
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
    this.#primitives ??= primitiveHost({ ...this.#holdHost, redlock: this.#redlock, notifications: this.#notifications });
    return this.#primitives;
  }

  /** Runs an API call: a closed manager and bad input reject before any network call. */
  #start<T>(call: () => Promise<T>): Promise<T> {
    // Not an async function: a held withLock would keep one more suspended frame alive per lock.
    if (this.#closing.signal.aborted) return Promise.reject(new ManagerClosedError());
    try {
      return call();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #emit<E extends LockEventName>(event: E, ...args: LockEvents[E]): void {
    this.#telemetry.event(event, args[0]);
    this.#events.emit(event, ...args);
  }
}
