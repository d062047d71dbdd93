// The boundary between what a lock is to its user (lock-manager.ts, lock.ts, hold.ts, the primitives, the
// CLI) and how a store grants it. A backend wins grants, extends and releases them, and answers an
// operator's questions; everything above it is the same for every store. Each backend lives in its own
// folder (redis/, etcd/, zookeeper/) and is readable on its own; backends.ts picks one from what the user passed.
import type { NodeFailure } from './errors.js';
import type { LockEvents } from './events.js';
import type { ResolvedAcquire } from './options.js';

/** What one successful acquire hands to a Lock. A backend may add its own fields (a Redis grant its nodes' epochs). */
export interface Grant {
  readonly resources: readonly string[];
  readonly token: string;
  readonly fence: bigint;
  readonly ttl: number;
  /** monotonic ms at which the guaranteed validity ends */
  readonly validUntil: number;
  /** how this grant is extended and released; absent: the backend's mutex lease (`Backend.lease`) */
  readonly ops?: LeaseOps;
}

/** Extend and release of one kind of grant: a mutex, a semaphore permit, a read or a write hold. */
export interface LeaseOps {
  /** `{ grant }`: extended (a new validity); otherwise how many nodes extended and which failed (the Lock decides) */
  extend(grant: Grant, ttl: number): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }>;
  /** compare-and-delete everywhere; never rejects */
  release(grant: Grant): Promise<{ released: number; nodes: number }>;
  /**
   * Optional, for stores that can tell at once (etcd: a watch on the grant's keys): calls `lost` when the
   * grant is gone before its lease ends (revoked, deleted by an operator). Returns a function that stops
   * listening. An auto-extending Lock listens while it is held; without it, loss shows at the next extension.
   */
  watchLoss?(grant: Grant, lost: (reason: string) => void): () => void;
}

/** The `retry` event's payload: a waiter tries again. */
export interface RetryInfo {
  readonly resources: readonly string[];
  /** 1 for the first retry */
  readonly attempt: number;
  /** what woke the waiter: a release notification, or its backoff timer */
  readonly reason: 'notified' | 'timer';
  readonly waited: number;
}

/** A grant won, and what winning it took. */
export interface WaitResult {
  readonly grant: Grant;
  readonly attempts: number;
  readonly waited: number;
  /**
   * The grant's validity is short of its ttl (a lock a release handed over, dated from before the hand-over:
   * redis/handed-grant.ts): the lock extends it to its ttl at once, while the caller already works.
   */
  readonly provisional?: true;
}

/**
 * One acquire call of one kind of hold: wait (within `o.timeout`; 0 = one attempt) until granted, or reject
 * with LockTimeoutError, QuorumError or the signal's reason. The caller turns the grant into a held Lock.
 */
export type Win = (o: ResolvedAcquire, signal: AbortSignal, onRetry: (info: RetryInfo) => void) => Promise<WaitResult>;

/**
 * What a node's marker says of its data (Redis; a consensus store's member is always 'trusted'):
 * - 'trusted': it kept its data since the deployment began (or was repaired since): its grants count;
 * - 'quarantined': it lost its data and counts toward no acquire for `quarantinedFor` ms more;
 * - 'repairing': quarantine over, this manager is about to raise its counter and mark it trusted;
 * - 'untrusted': it lost its data and is not repaired (fewer than a majority of trusted nodes answer);
 * - 'new': no node is trusted yet (a new deployment): the first acquire marks them all trusted;
 * - 'empty': no marker at all (nothing has run on it since it came back empty).
 */
export type NodeDataState = 'trusted' | 'quarantined' | 'repairing' | 'untrusted' | 'new' | 'empty';

/** One node's view of a resource, as `LockManager.inspect` reports it (an etcd cluster is one node). */
export interface NodeView {
  /** the node's address, e.g. `127.0.0.1:7001` (etcd: `etcd://` and the cluster's endpoints) */
  readonly node: string;
  /** the holder's owner token, or null when free (or on error) */
  readonly owner: string | null;
  /** ms left on the lease (-1: no expiry); 0 when free */
  readonly remaining: number;
  /** waiters in the resource's queue on this node */
  readonly waiters: number;
  /** the node's fence counter (the next fence there exceeds it); etcd: the holder's fence; null on error */
  readonly fence: bigint | null;
  /** the node's data state; null on error */
  readonly state: NodeDataState | null;
  /** ms left of the node's restart quarantine (0: none) */
  readonly quarantinedFor: number;
  /** the node's error (unreachable, timed out, an error reply), or null when it answered */
  readonly error: Error | null;
}

/** What `inspect` reports for one resource. */
export interface LockInfo {
  /** the resource inspected */
  readonly resource: string;
  /** nodes needed for a quorum (etcd: 1, the cluster answers as one) */
  readonly quorum: number;
  /** the owner token a quorum of nodes agrees on, or null */
  readonly holder: string | null;
  /** the largest fence counter any node reported (etcd: the holder's fence, 0 when free) */
  readonly fence: bigint;
  /** what each node said, in the order the clients were given */
  readonly nodes: readonly NodeView[];
}

/** What a backend may tell its manager. */
export interface BackendHost {
  emit<E extends keyof LockEvents>(event: E, ...args: LockEvents[E]): void;
}

/** A store that grants locks. One per LockManager; made by backends.ts. */
export interface Backend {
  /** nodes asked, and how many must agree: for messages (etcd: 1 and 1, the cluster decides as one) */
  readonly nodeCount: number;
  readonly quorum: number;
  /** the longest one extension round can take (ms): an auto-extending lock closer to its end is watched meanwhile */
  readonly roundTimeout: number;
  /** extend and release of a mutex grant */
  readonly lease: LeaseOps;
  /** a mutex on all of `resources` (sorted, distinct) */
  acquire(resources: readonly string[], o: ResolvedAcquire, signal: AbortSignal, onRetry: (info: RetryInfo) => void): Promise<WaitResult>;
  /** a held mutex on one resource was released by this process: a waiter here may take it at once */
  releasedHere(resource: string): void;
  /** read-only: who holds it, for how long, the fence, the waiters */
  inspect(resource: string): Promise<LockInfo>;
  /** delete the lock whoever holds it; how many nodes had it */
  forceRelease(resource: string): Promise<number>;
  /** one acquire call for a permit of the semaphore `name` */
  semaphore(name: string, limit: number): Win;
  /** one acquire call for a read or write hold of the read-write lock `name` */
  readWrite(name: string, mode: 'read' | 'write'): Win;
  /** after the manager released what it holds: let background work finish, close what the backend opened */
  close(): Promise<void>;
}
