import type { LockLostError } from './errors.js';

/** A lock was acquired. */
export interface AcquiredEvent {
  /** the resources locked, sorted */
  readonly resources: readonly string[];
  /** the lock's fencing token */
  readonly fence: bigint;
  /** the holder's owner token */
  readonly value: string;
  /** acquire rounds it took, the first included */
  readonly attempts: number;
  /** ms spent waiting for it */
  readonly waited: number;
}

/** A lock was released by its holder. */
export interface ReleasedEvent {
  /** the resources released */
  readonly resources: readonly string[];
  /** the lock's fencing token */
  readonly fence: bigint;
  /** nodes where the holder's key was deleted */
  readonly released: number;
  /** nodes asked */
  readonly nodes: number;
}

/** A held lock's lease was extended on a quorum. */
export interface ExtendedEvent {
  /** the lock's resources */
  readonly resources: readonly string[];
  /** the lock's fencing token */
  readonly fence: bigint;
  /** the new lease, ms */
  readonly ttl: number;
  /** ms of guaranteed validity now left */
  readonly remaining: number;
}

/** A held lock was lost: an extension failed, or its validity ran out. */
export interface LostEvent {
  /** the lock's resources */
  readonly resources: readonly string[];
  /** the lost lock's fencing token: a store must now reject it */
  readonly fence: bigint;
  /** why */
  readonly error: LockLostError;
}

/** A node failed a request; reported, never thrown into a caller that did not make that request. */
export interface NodeErrorEvent {
  /** the node's address */
  readonly node: string;
  /** what it answered, or why it did not */
  readonly error: Error;
  /**
   * `'acquire'`, `'fence write-back'`, `'extend'`, `'release'`, `'dequeue'` (a waiter leaving its queue),
   * `'forceRelease'`, `'repair'` or `'connection'`
   */
  readonly operation: string;
  /** the resources of the operation (none for connection errors and repairs) */
  readonly resources: readonly string[];
}

/** A waiter tries again. */
export interface RetryEvent {
  /** the resources it waits for */
  readonly resources: readonly string[];
  /** 1 for the first retry */
  readonly attempt: number;
  /** what woke it: a release notification, or its backoff timer */
  readonly reason: 'notified' | 'timer';
  /** ms waited so far */
  readonly waited: number;
}

/** A node lost its data (restart without persistence, FLUSHALL, failover to an empty replica). */
export interface NodeQuarantinedEvent {
  /** the node's address */
  readonly node: string;
  /** epoch ms (this process's clock) until which its grants count toward no acquire */
  readonly until: number;
}

/** A node that lost its data was repaired: its fence counter raised, and it counts fully again. */
export interface NodeRepairedEvent {
  /** the node's address */
  readonly node: string;
  /** fence counters raised (1 per standalone node, 1 per hash slot of a Cluster node) */
  readonly countersRaised: number;
  /** ms the repair took */
  readonly ms: number;
}

/** Payloads of the manager's events, by event name: `locks.on(name, (payload) => …)`. */
export interface LockEvents {
  /** a lock was acquired */
  acquired: [AcquiredEvent];
  /** a lock was released by its holder */
  released: [ReleasedEvent];
  /** a held lock's lease was extended */
  extended: [ExtendedEvent];
  /** a held lock was lost (its `signal` aborted with the same error) */
  lost: [LostEvent];
  /** a node failed a request */
  nodeError: [NodeErrorEvent];
  /** a waiter tries again */
  retry: [RetryEvent];
  /** a node lost its data: in restart quarantine until `until` */
  nodeQuarantined: [NodeQuarantinedEvent];
  /** a node that lost its data was repaired */
  nodeRepaired: [NodeRepairedEvent];
}

/** The name of one of the manager's events. */
export type LockEventName = keyof LockEvents;
/** A listener of event `E`. */
export type LockEventListener<E extends LockEventName> = (...args: LockEvents[E]) => void;
