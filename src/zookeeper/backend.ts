// fencelock on ZooKeeper: Curator's lock recipe (recipe.ts) over the queues of queue.ts, behind the Backend
// interface. The ensemble decides as one (Zab), so it counts as one node with a quorum of one in messages
// and inspect. The lease of every lock is the manager's session (its timeout: the manager's `ttl`).
import type { Backend, BackendHost, LeaseOps, LockInfo, Win } from '../backend.js';
import { inspectOneNode } from '../consensus-call.js';
import { rejectRedisOnlyOptions, type LockManagerOptions, type ResolvedManagerOptions } from '../options.js';
import { mutexQueue, ordered, rootOf, rwQueue, semaphoreQueue, type Queue } from './queue.js';
import { acquire, extend, release, watchLoss, type Hold, type ZooKeeperGrant } from './recipe.js';
import { KnownQueues } from './known-queues.js';
import { ZooKeeperStore, type ZooKeeperInput } from './store.js';
import { startSweeping, sweepPeriod } from './sweep.js';

/**
 * How long one ZooKeeper call may take. A call that meets a leader election waits for it rather than
 * failing; one that outlives this drops the connection, and the client moves to another server.
 */
export const ZOOKEEPER_REQUEST_TIMEOUT = 2_000;

export class ZooKeeperBackend implements Backend {
  readonly nodeCount = 1;
  readonly quorum = 1;
  readonly roundTimeout = ZOOKEEPER_REQUEST_TIMEOUT;
  readonly lease: LeaseOps;
  readonly #store: ZooKeeperStore;
  /** the queues this manager knows to exist: which create an acquire sends (known-queues.ts) */
  readonly #known: KnownQueues;
  readonly #root: string;
  readonly #stopSweeping: () => void;

  /** InvalidArgumentError for a bad URL or a Redis-only option, before anything connects. */
  constructor(input: ZooKeeperInput, given: LockManagerOptions | undefined, options: ResolvedManagerOptions, host: BackendHost) {
    rejectRedisOnlyOptions(given, "a ZooKeeper lock's lease is its session (see docs/zookeeper.md)");
    this.#root = rootOf(options.keyPrefix);
    this.#store = new ZooKeeperStore(input, ZOOKEEPER_REQUEST_TIMEOUT, options.ttl, host);
    // Known for one sweep period after their last use: a sweep (another manager's with the same ttl) deletes them after that.
    this.#known = new KnownQueues(sweepPeriod(options.ttl));
    // Queues left empty by a session that ended without releasing: deleted by whichever manager sweeps first.
    this.#stopSweeping = startSweeping(this.#store, this.#known, this.#root, sweepPeriod(options.ttl));
    const store = this.#store;
    const known = this.#known;
    this.lease = {
      extend: (grant, ttl) => extend(store, grant as ZooKeeperGrant, ttl),
      release: (grant) => release(store, known, grant as ZooKeeperGrant),
      watchLoss: (grant, lost) => watchLoss(store, grant as ZooKeeperGrant, lost),
    };
  }

  acquire: Backend['acquire'] = (resources, o, signal, onRetry) =>
    acquire(
      this.#store,
      this.#known,
      this.#hold(
        resources,
        resources.map((r) => mutexQueue(this.#root, r)),
      ),
      o,
      signal,
      onRetry,
    );

  /** Nothing to do: the waiter behind this holder hears of the release from its watch. */
  releasedHere(): void {}

  inspect(resource: string): Promise<LockInfo> {
    const queue = mutexQueue(this.#root, resource);
    return inspectOneNode(resource, this.#store.name, async () => {
      const look = await this.#store.list(queue.path);
      const children = ordered(look?.names ?? []);
      const first = children[0];
      const holder = first ? await this.#store.read(`${queue.path}/${first.name}`) : null;
      return {
        owner: holder?.data ?? null,
        // The holder's lease is its session, which only its own client sees: held until released or that session ends.
        remaining: holder ? -1 : 0,
        waiters: Math.max(0, children.length - 1),
        // The queue's last change: at least the holder's fence, and less than every later holder's (recipe.ts, takeTurn).
        fence: holder && look ? look.pzxid : 0n,
      };
    });
  }

  /** Deletes the holder's znode: the holder's watch tells it at once (its signal aborts), the next waiter's watch too. */
  async forceRelease(resource: string): Promise<number> {
    const queue = mutexQueue(this.#root, resource);
    const [first] = ordered((await this.#store.children(queue.path)) ?? []);
    if (!first) return 0;
    return (await this.#store.remove(`${queue.path}/${first.name}`)) ? 1 : 0;
  }

  semaphore(name: string, limit: number): Win {
    const hold = this.#hold([name], [semaphoreQueue(this.#root, name, limit)]);
    return (o, signal, onRetry) => acquire(this.#store, this.#known, hold, o, signal, onRetry);
  }

  readWrite(name: string, mode: 'read' | 'write'): Win {
    const hold = this.#hold([name], [rwQueue(this.#root, name, mode)]);
    return (o, signal, onRetry) => acquire(this.#store, this.#known, hold, o, signal, onRetry);
  }

  async close(): Promise<void> {
    this.#stopSweeping();
    await this.#store.close();
  }

  #hold(resources: readonly string[], queues: readonly Queue[]): Hold {
    return { resources, queues, ops: this.lease };
  }
}
