// The shapes the Redis protocol's files share: a grant and its lease operations, what one acquire round
// amounts to, a node's reply as the judge takes it, and the node set as the lease and judge steps see it
// (the Redlock class implements it; they need nothing else of it, so they do not import it).
import type { BusyMarks } from './handed-grant.js';
import type { Grant as BaseGrant, LeaseOps as BaseLeaseOps } from '../backend.js';
import type { NodeFailure } from '../errors.js';
import type { ResolvedManagerOptions } from '../options.js';
import type { RedisNode } from './adapters/index.js';
import type { ExtendBatcher } from './extend-batch.js';
import type { ResourceKeys } from './keys.js';
import type { NodeHealth } from './node-health.js';
import type { NodeState } from './replies.js';
import type { Repairs } from './repair.js';

/** A Redis grant: what every grant has, and the epochs of the nodes it was won on. */
export interface Grant extends BaseGrant {
  /** per node: the epoch it had when we took the lock there ('' where we did not) */
  readonly epochs: readonly string[];
}

/** Extend and release of a Redis grant (a mutex's, a permit's, a read or write hold's). */
export interface LeaseOps extends BaseLeaseOps {
  extend(grant: Grant, ttl: number): ReturnType<BaseLeaseOps['extend']>;
  release(grant: Grant): ReturnType<BaseLeaseOps['release']>;
}

export type Attempt =
  /** `provisional`: a grant a release handed us, valid for less than its ttl until extended (handed-grant.ts) */
  | { readonly kind: 'acquired'; readonly grant: Grant; readonly provisional?: true }
  /**
   * Someone else holds it or is ahead of us in the queue. `retryAfter` ms from now the holder's keys
   * expire on enough nodes for a quorum; `behind`: other waiters come first on enough nodes that our
   * turn is not next.
   */
  | {
      readonly kind: 'busy';
      readonly retryAfter: number;
      readonly busyNodes: number;
      readonly behind: boolean;
      readonly leader?: number;
    }
  /** Not enough nodes answered; contention was not the reason. */
  | { readonly kind: 'no-quorum'; readonly successes: number; readonly needed: number; readonly failures: readonly NodeFailure[] }
  /** Nobody holds it, but nodes in restart quarantine count again only `retryAfter` ms from now. */
  | {
      readonly kind: 'quarantined';
      readonly retryAfter: number;
      readonly successes: number;
      readonly needed: number;
      readonly failures: readonly NodeFailure[];
    }
  /** A quorum said yes but too late: the lease was used up on the way (slow nodes, drift). */
  | { readonly kind: 'expired' };

export interface NodeErrorReport {
  (node: RedisNode, error: Error, operation: string, resources: readonly string[]): void;
}

/** How the manager hears of nodes: errors, and a node's data loss and repair (events of the same names). */
export interface NodeEvents {
  readonly nodeError: NodeErrorReport;
  nodeQuarantined(node: RedisNode, left: number): void;
  nodeRepaired(node: RedisNode, countersRaised: number, ms: number): void;
}

/** One node's reply to any primitive's acquire round, as `judge` takes it. */
export type RoundReply =
  | ({ readonly kind: 'granted' } & NodeState)
  /** `wait`: ms until what blocks us there ends (Infinity: unknown); `ahead`: a waiter is ahead of us */
  | ({ readonly kind: 'held'; readonly wait: number; readonly ahead: boolean } & NodeState)
  | { readonly kind: 'error'; readonly error: Error };

/** How one acquire round takes its place in the resources' wait queues. */
export interface QueueOptions {
  /** respect the queue: a waiter ahead of us gets the lock first */
  readonly fair: boolean;
  /** this waiter's place (its arrival time), or '' to stay out of the queue (a single attempt) */
  readonly ticket: string;
  /** ms our place is kept without a new attempt (a crashed waiter blocks the queue no longer) */
  readonly lease: number;
  /**
   * a waiter outside the queue (fair: false): a release announces itself on the shared channel only while
   * such a waiter watches the key (acquire.lua `<base>:watch`), so its failed attempts ask for that
   */
  readonly watch?: boolean;
  /** a fair one-resource waiter's record of its queued attempts, to date a grant a release hands it (handed-grant.ts) */
  readonly marks?: BusyMarks;
}

/** What the steps outside redlock.ts (lease.ts, judge.ts) need of the node set. */
export interface NodeSet {
  readonly nodes: readonly RedisNode[];
  readonly quorum: number;
  readonly options: ResolvedManagerOptions;
  /** restart quarantine: which nodes lost their data, and until when their grants do not count */
  readonly health: NodeHealth;
  /** background repair of nodes that lost their data */
  readonly repairs: Repairs;
  /** per standalone node: extensions due together go out as one call (undefined: a Cluster node) */
  readonly batchers: ReadonlyArray<ExtendBatcher | undefined>;
  readonly reportNodeError: NodeErrorReport;
  /** some node is a Redis Cluster (keys of one call must share a slot; markers per slot) */
  readonly anyCluster: boolean;
  keys(resources: readonly string[]): ResourceKeys[];
  markerFor(i: number, keys: readonly ResourceKeys[]): string;
  /** markerFor of the keys whose first lock key is `lock` */
  markerOfLock(i: number, lock: string): string;
  scopeFor(i: number, keys: readonly ResourceKeys[]): string;
  /** `epoch` as node i's shared copy (see Redlock.epochOf) */
  epochOf(i: number, epoch: string): string;
}
