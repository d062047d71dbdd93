// fencelock on etcd: the lock recipe (recipe.ts) over the queues of queue.ts, behind the Backend interface.
// The cluster decides as one (Raft), so it counts as one node with a quorum of one in messages and inspect.
import type { Backend, BackendHost, LeaseOps, LockInfo, Win } from '../backend.js';
import { inspectOneNode } from '../consensus-call.js';
import { rejectRedisOnlyOptions, type LockManagerOptions, type ResolvedManagerOptions } from '../options.js';
import { mutexQueue, ownerOf, rwQueue, semaphoreQueue, type Queue } from './queue.js';
import { LocalHandOvers } from './hand-over.js';
import { LeasePool } from './leases.js';
import { LocalLines } from './local-line.js';
import { acquire, extend, passOn, queueKeys, release, watchLoss, type EtcdGrant, type Hold } from './recipe.js';
import { randomHex } from '../random.js';
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
  /** leases of released locks, lent to the next ones (leases.ts); this manager's waiters a release can serve (hand-over.ts) */
  readonly #local = { pool: new LeasePool(), handOvers: new LocalHandOvers() };
  readonly #keyPrefix: string;
  /** this manager's callers of each mutex, one of them at etcd at a time (local-line.ts) */
  readonly #lines: LocalLines;

  /** InvalidArgumentError for a bad URL or a Redis-only option, before anything connects. */
  constructor(input: EtcdInput, given: LockManagerOptions | undefined, options: ResolvedManagerOptions, host: BackendHost) {
    rejectRedisOnlyOptions(given, 'etcd leases and fences need no such setting (see docs/etcd.md)');
    this.#keyPrefix = options.keyPrefix;
    this.#store = new EtcdStore(input, ETCD_REQUEST_TIMEOUT, host);
    const store = this.#store;
    const local = this.#local;
    const lines = new LocalLines(
      (resource) => (o, signal, onRetry) => acquire(store, local, this.#mutex([resource]), o, signal, onRetry),
      (held, next) => passOn(store, held, next),
      () => randomHex(18),
    );
    this.#lines = lines;
    const releasedGrants = new WeakSet<EtcdGrant>();
    this.lease = {
      extend: (grant, ttl) => extend(store, grant as EtcdGrant, ttl),
      release: async (grant) => {
        const g = grant as EtcdGrant;
        // Once per grant: a lock lost and then released comes twice, and by the second time its lease may
        // carry another hold (lent again, or passed on in the line), which a second release must not revoke.
        if (releasedGrants.has(g)) return { released: 0, nodes: 1 };
        releasedGrants.add(g);
        const resource = g.resources.length === 1 ? (g.resources[0] as string) : undefined;
        // Only a mutex on one resource has a line (a semaphore or read-write hold of the same name does not).
        if (resource === undefined || !g.keys[0]?.toString().startsWith(mutexQueue(options.keyPrefix, resource).prefix))
          return release(store, local, g);
        // The next caller of this process for the resource may take it with one write (local-line.ts).
        const rest = await lines.handOver(resource, g);
        if (!rest) return { released: 1, nodes: 1 };
        const result = await release(store, local, rest);
        lines.released(resource);
        return result;
      },
      watchLoss: (grant, lost) => watchLoss(store, grant as EtcdGrant, lost),
    };
  }

  /** A mutex on one resource waits in its line of this process's callers (local-line.ts); a single attempt or several resources go to etcd at once. */
  acquire: Backend['acquire'] = (resources, o, signal, onRetry) =>
    resources.length === 1 && o.timeout > 0
      ? this.#lines.acquire(resources[0] as string, o, signal, onRetry)
      : acquire(this.#store, this.#local, this.#mutex(resources), o, signal, onRetry);

  #mutex(resources: readonly string[]): Hold {
    return this.#hold(
      resources,
      resources.map((r) => mutexQueue(this.#keyPrefix, r)),
    );
  }

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
    return (o, signal, onRetry) => acquire(this.#store, this.#local, hold, o, signal, onRetry);
  }

  readWrite(name: string, mode: 'read' | 'write'): Win {
    const hold = this.#hold([name], [rwQueue(this.#keyPrefix, name, mode)]);
    return (o, signal, onRetry) => acquire(this.#store, this.#local, hold, o, signal, onRetry);
  }

  async close(): Promise<void> {
    this.#local.pool.clear();
    await this.#store.close();
  }

  #hold(resources: readonly string[], queues: readonly Queue[]): Hold {
    return { resources, queues, ops: this.lease };
  }
}
