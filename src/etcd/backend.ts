// fencelock on etcd: the lock recipe (recipe.ts) over the queues of queue.ts, behind the Backend interface.
// The cluster decides as one (Raft), so it counts as one node with a quorum of one in messages and inspect.
import type { Backend, BackendHost, LeaseOps, LockInfo, Win } from '../backend.js';
import { inspectOneNode } from '../consensus-call.js';
import { rejectRedisOnlyOptions, type LockManagerOptions, type ResolvedManagerOptions } from '../options.js';
import { mutexQueue, ownerOf, rwQueue, semaphoreQueue, type Queue } from './queue.js';
import { LeasePool } from './leases.js';
import { acquire, extend, queueKeys, release, watchLoss, type EtcdGrant, type Hold } from './recipe.js';
import { EtcdStore, type EtcdInput } from './store.js';

/**
 * How long one etcd request may take. Longer than a Redis node's: a request that meets a leader election
 * waits for it (1 s with etcd's default election timeout) rather than failing.
 */
export const ETCD_REQUEST_TIMEOUT = 2_000;

export class EtcdBackend implements Backend {
  readonly nodeCount = 1;
  readonly quorum = 1;
  readonly roundTimeout = ETCD_REQUEST_TIMEOUT;
  readonly lease: LeaseOps;
  readonly #store: EtcdStore;
  /** leases of released locks, lent to the next ones (leases.ts) */
  readonly #pool = new LeasePool();
  readonly #keyPrefix: string;

  /** InvalidArgumentError for a bad URL or a Redis-only option, before anything connects. */
  constructor(input: EtcdInput, given: LockManagerOptions | undefined, options: ResolvedManagerOptions, host: BackendHost) {
    rejectRedisOnlyOptions(given, 'etcd leases and fences need no such setting (see docs/etcd.md)');
    this.#keyPrefix = options.keyPrefix;
    this.#store = new EtcdStore(input, ETCD_REQUEST_TIMEOUT, host);
    const store = this.#store;
    const pool = this.#pool;
    this.lease = {
      extend: (grant, ttl) => extend(store, grant as EtcdGrant, ttl),
      release: (grant) => release(store, pool, grant as EtcdGrant),
      watchLoss: (grant, lost) => watchLoss(store, grant as EtcdGrant, lost),
    };
  }

  acquire: Backend['acquire'] = (resources, o, signal, onRetry) =>
    acquire(
      this.#store,
      this.#pool,
      this.#hold(
        resources,
        resources.map((r) => mutexQueue(this.#keyPrefix, r)),
      ),
      o,
      signal,
      onRetry,
    );

  /** Nothing to do: the waiter behind this holder hears of the release from its watch. */
  releasedHere(): void {}

  inspect(resource: string): Promise<LockInfo> {
    return inspectOneNode(resource, this.#store.name, async () => {
      const kvs = await queueKeys(this.#store, mutexQueue(this.#keyPrefix, resource));
      const holder = kvs[0];
      return {
        owner: holder ? ownerOf(holder.value) : null,
        remaining: holder ? Math.max(0, await this.#store.timeToLive(String(holder.lease))) : 0,
        waiters: Math.max(0, kvs.length - 1),
        fence: holder ? BigInt(holder.mod_revision) : 0n,
      };
    });
  }

  /** Revokes the holder's lease: its keys go (on every resource of its lock) and its next extension fails. */
  async forceRelease(resource: string): Promise<number> {
    const [holder] = await queueKeys(this.#store, mutexQueue(this.#keyPrefix, resource));
    if (!holder) return 0;
    return (await this.#store.revoke(String(holder.lease))) ? 1 : 0;
  }

  semaphore(name: string, limit: number): Win {
    const hold = this.#hold([name], [semaphoreQueue(this.#keyPrefix, name, limit)]);
    return (o, signal, onRetry) => acquire(this.#store, this.#pool, hold, o, signal, onRetry);
  }

  readWrite(name: string, mode: 'read' | 'write'): Win {
    const hold = this.#hold([name], [rwQueue(this.#keyPrefix, name, mode)]);
    return (o, signal, onRetry) => acquire(this.#store, this.#pool, hold, o, signal, onRetry);
  }

  async close(): Promise<void> {
    this.#pool.clear();
    await this.#store.close();
  }

  #hold(resources: readonly string[], queues: readonly Queue[]): Hold {
    return { resources, queues, ops: this.lease };
  }
}
