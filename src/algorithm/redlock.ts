import type { RedisNode } from '../adapters/index.js';
import { monotonicNow } from '../clock.js';
import { NodeError, type NodeFailure } from '../errors.js';
import { keysFor, markerKey, type ResourceKeys } from '../keys.js';
import { driftOf, type ResolvedManagerOptions, type WaitForReplicas } from '../options.js';
import { scripts } from '../scripts/index.js';
import { ExtendBatcher, type NodeExtendReply } from './extend-batch.js';
import { Quarantine } from './quarantine.js';
import { randomHex, randomSlice } from './random.js';
import { countGrants, type GrantCount, type NodeAnswer } from './trust.js';

/**
 * The protocol, in one place. One node is the single-instance lock; N nodes
 * are Redlock. Every step sends the same request to all nodes in parallel,
 * each bounded by nodeTimeout, and counts answers against the quorum
 * floor(N/2) + 1. Lease arithmetic uses the monotonic clock only:
 *
 *   validity = ttl - elapsed - drift,   drift = floor(ttl * driftFactor) + 2
 *
 * measured from just before the first request left.
 */

/** What one successful acquire hands to a Lock. */
export interface Grant {
  readonly resources: readonly string[];
  readonly token: string;
  readonly fence: bigint;
  readonly ttl: number;
  /** monotonic ms at which the guaranteed validity ends */
  readonly validUntil: number;
  /** per node: the epoch it had when we took the lock there ('' where we did not) */
  readonly epochs: readonly string[];
  /** how this grant is extended and released; absent: the mutex's own (Redlock.extend / Redlock.release) */
  readonly ops?: LeaseOps;
}

/** Extend and release of one kind of grant: the mutex (Redlock), a semaphore permit, a read or a write hold. */
export interface LeaseOps {
  extend(grant: Grant, ttl: number): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }>;
  release(grant: Grant): Promise<{ released: number; nodes: number }>;
}

const UNTRUSTED =
  'its fence counter for this resource is not known to be complete (the node is new to this deployment or lost its data) ' +
  'and not repaired yet: its grant counts once a quorum of trustworthy nodes (or every node) answers';

/** The longest a connection that has never been ready may take for its first handshake. */
const FIRST_CONNECT_MS = 1_000;

/** After a leader failed, waiters go straight to all nodes for this long. */
const LEADER_COOLDOWN_MS = 1_000;

export type Attempt =
  | { readonly kind: 'acquired'; readonly grant: Grant }
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
  /** A quorum said yes but too late: the lease was used up on the way (slow nodes, drift). */
  | { readonly kind: 'expired' };

export interface NodeErrorReport {
  (node: RedisNode, error: Error, operation: string, resources: readonly string[]): void;
}

interface NodeState {
  epoch: string;
  /** ms since this node's data was created (its marker) */
  age: number;
  nodeTrusted: boolean;
  resourcesTrusted: boolean;
}

type AcquireReply =
  | ({ kind: 'granted'; fence: bigint } & NodeState)
  /** held by another owner (pttl > 0 or -1), or free but another waiter is ahead of us (`ahead`) */
  | ({ kind: 'held'; pttl: number; ahead: boolean } & NodeState)
  | { kind: 'error'; error: Error };

/** How one acquire round takes its place in the resources' wait queues. */
export interface QueueOptions {
  /** respect the queue: a waiter ahead of us gets the lock first */
  readonly fair: boolean;
  /** this waiter's place (its arrival time), or '' to stay out of the queue (a single attempt) */
  readonly ticket: string;
  /** ms our place is kept without a new attempt (a crashed waiter blocks the queue no longer) */
  readonly lease: number;
}

const NO_QUEUE: QueueOptions = { fair: true, ticket: '', lease: 0 };

export class Redlock {
  readonly quorum: number;
  /**
   * Starts every owner token this manager's mutex waiters use, so that a release can address the process
   * of the waiter whose turn it is: it publishes on `<channel>:<managerId>`, which only that manager
   * listens to (see release.lua). 48 random bits, base64url: 8 characters.
   */
  readonly managerId = randomSlice(6).toString('base64url');
  private readonly marker: string;
  private readonly quarantine: Quarantine;
  /** node indexes sorted by address: every process picks the same leader whatever order it lists the nodes in */
  private readonly byName: readonly number[];
  /** monotonic time of each node's last failed acquire request */
  private readonly lastFailure: number[];
  /** background cleanups (waiters leaving queues) that close() lets finish before the connections go */
  private readonly cleanups = new Set<Promise<unknown>>();
  /** per standalone node: extensions due together go out as one call (undefined: a Cluster node) */
  private readonly batchers: ReadonlyArray<ExtendBatcher | undefined>;

  constructor(
    readonly nodes: readonly RedisNode[],
    readonly options: ResolvedManagerOptions,
    private readonly reportNodeError: NodeErrorReport,
  ) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
    this.marker = markerKey(options.keyPrefix);
    this.quarantine = new Quarantine(options.restartQuarantine, nodes.length);
    this.byName = nodes
      .map((n, i) => [n.name, i] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, i]) => i);
    this.lastFailure = nodes.map(() => -Infinity);
    this.batchers = nodes.map((node) => (node.isCluster ? undefined : new ExtendBatcher(node, this.marker, options.nodeTimeout)));
  }

  keys(resources: readonly string[]): ResourceKeys[] {
    return resources.map((r) => keysFor(this.options.keyPrefix, r));
  }

  /** The epoch marker key on node i: one per node, or one per slot on a Cluster node. */
  private markerFor(i: number, keys: readonly ResourceKeys[]): string {
    return (this.nodes[i] as RedisNode).isCluster ? (keys[0] as ResourceKeys).slotMarker : this.marker;
  }

  /** Which marker the quarantine tracks for these keys on node i: the node's one marker, or (Cluster) the resource's. */
  private scopeFor(i: number, keys: readonly ResourceKeys[]): string {
    return (this.nodes[i] as RedisNode).isCluster ? this.markerFor(i, keys) : '';
  }

  /** Runs `work` in the background; `settle()` waits for it. Never rejects. */
  background(work: Promise<unknown>): void {
    const tracked = work.catch(() => undefined);
    this.cleanups.add(tracked);
    void tracked.then(() => this.cleanups.delete(tracked));
  }

  /** Resolves once every background cleanup has finished (each is bounded by nodeTimeout). */
  async settle(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  /** The node a waiter asks first for these resources (see acquireOnce). */
  leaderFor(resources: readonly string[]): number {
    let h = 0;
    for (const r of resources) for (let i = 0; i < r.length; i++) h = (Math.imul(h, 31) + r.charCodeAt(i)) | 0;
    return this.byName[(h >>> 0) % this.byName.length] as number;
  }

  static newToken(): string {
    // 144 random bits: unguessable, and never equal to another holder's.
    return randomSlice(18).toString('base64url');
  }

  /** A mutex owner token: this manager's id, then 144 random bits. */
  waiterToken(): string {
    return this.managerId + Redlock.newToken();
  }

  /** The channel on which releases of these resources wake this manager's waiters (their turn has come). */
  managerChannel(channel: string): string {
    return `${channel}:${this.managerId}`;
  }

  /**
   * One acquire round. On any failure, it has already released what it took.
   *
   * `leaderFirst` (used by waiters on their retries): ask one node first, and
   * only if it grants, the others. Waiters woken by the same release would
   * otherwise split the nodes' votes between them so that nobody reaches a
   * quorum and all back off; with a leader, the losers stop after one request
   * and touch nothing. The leader depends on the resource, not on the order
   * the clients were given in, so all processes agree on it. A leader that
   * failed recently is skipped.
   */
  async acquireOnce(
    resources: readonly string[],
    token: string,
    ttl: number,
    queue: QueueOptions = NO_QUEUE,
    leaderFirst = false,
  ): Promise<Attempt> {
    const keys = this.keys(resources);
    const keyArgs = (i: number): string[] => [
      ...keys.map((k) => k.lock),
      ...keys.map((k) => k.fence),
      ...keys.map((k) => k.queue),
      ...keys.map((k) => k.leases),
      this.markerFor(i, keys),
    ];
    const args = [
      token,
      String(ttl),
      String(resources.length),
      randomHex(8),
      queue.ticket,
      String(queue.lease),
      queue.fair ? '1' : '0',
      typeof this.options.restartQuarantine === 'number' ? '1' : '0',
    ];
    // A connection not yet up (a manager built from URLs a moment ago) may take longer, within what the lease allows.
    const firstConnect = Math.max(this.options.nodeTimeout, Math.min(FIRST_CONNECT_MS, Math.floor(ttl / 3)));
    const ask = (i: number): Promise<AcquireReply> => {
      const node = this.nodes[i] as RedisNode;
      return node
        .run(scripts.acquire, keyArgs(i), args, this.options.nodeTimeout, firstConnect)
        .then((reply) => parseAcquireReply(arrayReply(reply, 6, node, 'acquire'), node))
        .then((reply) => (reply.kind === 'granted' && this.options.waitForReplicas ? this.replicated(i, keys, reply) : reply))
        .then(undefined, (error: Error): AcquireReply => {
          this.lastFailure[i] = monotonicNow();
          return { kind: 'error', error };
        });
    };
    const start = monotonicNow();
    let replies: AcquireReply[];
    const leader = this.leaderFor(resources);
    if (leaderFirst && this.nodes.length > 1 && start - (this.lastFailure[leader] as number) > LEADER_COOLDOWN_MS) {
      const first = await ask(leader);
      if (first.kind === 'held') {
        this.quarantine.observe(leader, first.epoch, monotonicNow(), this.scopeFor(leader, keys));
        return { kind: 'busy', retryAfter: first.pttl < 0 ? Infinity : first.pttl, busyNodes: 1, behind: first.ahead, leader };
      }
      replies = await Promise.all(this.nodes.map((_, i) => (i === leader ? first : ask(i))));
    } else {
      replies = await Promise.all(this.nodes.map((_, i) => ask(i)));
    }
    const now = monotonicNow();

    const failures: NodeFailure[] = [];
    const heldFor: number[] = [];
    const answers = replies.map((reply, i): NodeAnswer => {
      const node = this.nodes[i] as RedisNode;
      if (reply.kind === 'error') {
        failures.push({ node: node.name, error: reply.error });
        this.reportNodeError(node, reply.error, 'acquire', resources);
        return { kind: 'error', nodeTrusted: false, resourcesTrusted: false, quarantined: false };
      }
      const scope = this.scopeFor(i, keys);
      this.quarantine.observe(i, reply.epoch, now, scope);
      // A free node where another waiter is ahead blocks us for as long as that waiter's turn takes, which no
      // TTL tells: count it as unbounded, so the wait falls back to the backoff instead of retrying at once.
      if (reply.kind === 'held') heldFor.push(reply.pttl < 0 || (reply.pttl === 0 && reply.ahead) ? Infinity : reply.pttl);
      const excluded = reply.kind === 'granted' ? this.quarantine.excludes(i, ttl, reply.age, now, scope) : undefined;
      if (excluded) failures.push({ node: node.name, error: new NodeError(node.name, excluded) });
      return {
        kind: reply.kind,
        nodeTrusted: reply.nodeTrusted,
        resourcesTrusted: reply.resourcesTrusted,
        quarantined: excluded !== undefined,
      };
    });
    const count = countGrants(answers, this.quorum);
    for (const i of count.untrusted) {
      const name = (this.nodes[i] as RedisNode).name;
      failures.push({ node: name, error: new NodeError(name, UNTRUSTED) });
    }
    const winners = count.counted;

    if (winners.length >= this.quorum) {
      const grant = await this.agreeOnFence(resources, keys, token, ttl, start, replies, count, failures);
      if (grant) {
        // Nodes that said "held" (the last holder's key was still there) queued us: leave those queues,
        // or we would stand first in line there, holding up the next waiter until our place lapses.
        const queuedOn = replies.flatMap((r, i) => (r.kind === 'held' && queue.ticket !== '' ? [i] : []));
        if (queuedOn.length > 0) this.background(this.dequeue(resources, token, queuedOn));
        return { kind: 'acquired', grant };
      }
    }

    // Release wherever the key may have been written: winners, quarantined
    // nodes and nodes whose answer we never saw. Nodes that answered "held" wrote nothing.
    const touched = this.nodes.map((_, i) => i).filter((i) => replies[i]?.kind !== 'held');
    await this.releaseOn(touched, keys, token, resources);

    if (heldFor.length > this.nodes.length - this.quorum) {
      // The holder's keys must vanish from enough of the busy nodes before a quorum is free.
      const needed = heldFor.length - (this.nodes.length - this.quorum);
      const retryAfter = heldFor.sort((a, b) => a - b)[needed - 1] as number;
      const behind = replies.filter((r) => r.kind === 'held' && r.ahead).length > this.nodes.length - this.quorum;
      return { kind: 'busy', retryAfter, busyNodes: needed, behind };
    }
    if (winners.length < this.quorum) return { kind: 'no-quorum', successes: winners.length, needed: this.quorum, failures };
    return { kind: 'expired' };
  }

  /**
   * waitForReplicas: a grant counts only once enough replicas of that node have the write. Otherwise it
   * is that node's error (its key is released with the others' when the round fails).
   */
  private async replicated(i: number, keys: readonly ResourceKeys[], reply: AcquireReply): Promise<AcquireReply> {
    const { replicas, timeout } = this.options.waitForReplicas as WaitForReplicas;
    const node = this.nodes[i] as RedisNode;
    const acked = await node.waitForReplicas((keys[0] as ResourceKeys).lock, replicas, timeout, this.options.nodeTimeout);
    if (acked >= replicas) return reply;
    throw new NodeError(node.name, `only ${acked} of ${replicas} replicas confirmed the lock within ${timeout} ms (waitForReplicas)`);
  }

  /**
   * The fence is the largest counter among the granting nodes, written back to
   * those that had less (and to those whose counter was not trustworthy, which
   * this repairs): the next holder's quorum overlaps ours in at least one
   * trustworthy node, whose counter then already exceeds our fence.
   */
  private async agreeOnFence(
    resources: readonly string[],
    keys: ResourceKeys[],
    token: string,
    ttl: number,
    start: number,
    replies: AcquireReply[],
    count: GrantCount,
    failures: NodeFailure[],
  ): Promise<Grant | undefined> {
    const granted = replies.flatMap((r, i) => (r.kind === 'granted' ? [{ i, r }] : []));
    const fence = granted.reduce((max, { r }) => (r.fence > max ? r.fence : max), 0n);
    // Every node that granted ran INCR, quarantined ones included: raise them all, not just the quorum.
    // On bootstrap, mark every answering node trusted (raising a counter is always safe), so that
    // a new deployment does not leave its other nodes untrusted for every later resource.
    const repair = replies.flatMap((r, i) => {
      if (r.kind === 'error' || (r.kind === 'held' && !count.bootstrap)) return [];
      const needed = count.bootstrap || (r.kind === 'granted' && r.fence < fence) || !(r.nodeTrusted || r.resourcesTrusted);
      return needed ? [{ i, r }] : [];
    });
    const needsRepair = new Set(repair.map(({ i }) => i));
    // The fence only has to reach a quorum: if enough counted nodes already hold it, nodes that merely lag
    // (they answered "held" last time, so missed an increment) are raised in the background, which saves
    // a round trip on most contended acquires. Repairs of trust (bootstrap, untrusted counters) are awaited.
    const atFence = count.counted.filter((i) => !needsRepair.has(i)).length;
    const lagOnly = (r: AcquireReply): boolean => !count.bootstrap && r.kind === 'granted' && (r.nodeTrusted || r.resourcesTrusted);
    const lazy = atFence >= this.quorum ? repair.filter(({ r }) => lagOnly(r)) : [];
    const lazySet = new Set(lazy.map(({ i }) => i));
    const repaired = new Set<number>();
    const raise = async ({ i, r }: { i: number; r: AcquireReply }): Promise<void> => {
      const fenceKeys = [...keys.map((k) => k.fence), this.markerFor(i, keys)];
      const epoch = r.kind === 'error' ? '' : r.epoch;
      if (await this.raiseFenceOn(i, fenceKeys, fence, epoch, count.bootstrap, resources, failures)) repaired.add(i);
    };
    for (const lagging of lazy) void raise(lagging);
    await Promise.all(repair.filter(({ i }) => !lazySet.has(i)).map(raise));
    const confirmed = count.counted.filter((i) => !needsRepair.has(i) || lazySet.has(i) || repaired.has(i));
    const validUntil = start + ttl - driftOf(ttl, this.options.driftFactor);
    if (confirmed.length < this.quorum || validUntil <= monotonicNow()) return undefined;
    const epochs = this.nodes.map((_, i) => {
      const reply = replies[i];
      return reply?.kind === 'granted' ? reply.epoch : '';
    });
    return { resources, token, fence, ttl, validUntil, epochs };
  }

  /**
   * Compare-and-extend on all nodes. Resolves with the new grant when a quorum
   * extended and validity is left; otherwise with the failures, and the lock is lost.
   */
  async extend(grant: Grant, ttl: number): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
    const keys = this.keys(grant.resources);
    const keyArgs = (i: number): string[] => [...keys.map((k) => k.lock), this.markerFor(i, keys)];
    const start = monotonicNow();
    const failures: NodeFailure[] = [];
    const epochs = [...grant.epochs];
    const lockKeys = keys.map((k) => k.lock);
    const extendOn = (i: number): Promise<NodeExtendReply> => {
      const batcher = this.batchers[i];
      const epoch = grant.epochs[i] ?? '';
      if (batcher) return batcher.extend(lockKeys, grant.token, ttl, epoch);
      const node = this.nodes[i] as RedisNode;
      return node
        .run(scripts.extend, keyArgs(i), [grant.token, String(ttl), epoch], this.options.nodeTimeout)
        .then((reply) => arrayReply(reply, 2, node, 'extend'))
        .then(([extended, e]) => ({ extended: Number(extended), epoch: typeof e === 'string' ? e : null }));
    };
    const counts = await Promise.all(
      this.nodes.map((node, i) =>
        extendOn(i).then(
          ({ extended, epoch }) => {
            this.quarantine.observe(i, epoch, monotonicNow(), this.scopeFor(i, keys));
            if (epoch !== null && extended === keys.length) epochs[i] = epoch;
            return extended;
          },
          (error: Error) => {
            failures.push({ node: node.name, error });
            this.reportNodeError(node, error, 'extend', grant.resources);
            return 0;
          },
        ),
      ),
    );
    const extended = counts.filter((c) => c === keys.length).length;
    const validUntil = start + ttl - driftOf(ttl, this.options.driftFactor);
    if (extended >= this.quorum && validUntil > monotonicNow()) {
      return { grant: { ...grant, ttl, validUntil, epochs } };
    }
    return { failures, extended };
  }

  /**
   * raise-fence.lua on node i: raise `fenceKeys`' counters to at least `fence` (and mark them trusted),
   * refused if the node lost its data since it had `epoch`. Resolves true when done; on failure, records
   * it in `failures`, reports it as a 'fence write-back' node error, and resolves false.
   */
  raiseFenceOn(
    i: number,
    fenceKeys: readonly string[],
    fence: bigint,
    epoch: string,
    bootstrap: boolean,
    resources: readonly string[],
    failures: NodeFailure[],
  ): Promise<boolean> {
    const node = this.nodes[i] as RedisNode;
    return node
      .run(scripts.raiseFence, fenceKeys, [fence.toString(), epoch, bootstrap ? '1' : '0'], this.options.nodeTimeout)
      .then((ok) => {
        if (Number(ok) !== 1) throw new NodeError(node.name, 'lost its data during the acquire (fence write-back refused)');
        return true;
      })
      .catch((error: Error) => {
        failures.push({ node: node.name, error });
        this.reportNodeError(node, error, 'fence write-back', resources);
        return false;
      });
  }

  /**
   * Raise the grant's fence counters to `fence` on every node that granted it (a multi-slot lock's one
   * fence, see cross-slot.ts). ok once a quorum raised them.
   */
  async raiseFence(grant: Grant, fence: bigint): Promise<{ ok: boolean; failures: NodeFailure[] }> {
    const keys = this.keys(grant.resources);
    const failures: NodeFailure[] = [];
    const raised = await Promise.all(
      this.nodes.map((_, i) => {
        const epoch = grant.epochs[i];
        if (!epoch) return false;
        const fenceKeys = [...keys.map((k) => k.fence), this.markerFor(i, keys)];
        return this.raiseFenceOn(i, fenceKeys, fence, epoch, false, grant.resources, failures);
      }),
    );
    return { ok: raised.filter(Boolean).length >= this.quorum, failures };
  }

  /** Compare-and-delete on every node; never throws. */
  async release(grant: Grant): Promise<{ released: number; nodes: number }> {
    const all = this.nodes.map((_, i) => i);
    const released = await this.releaseOn(all, this.keys(grant.resources), grant.token, grant.resources);
    return { released, nodes: this.nodes.length };
  }

  private async releaseOn(indexes: number[], keys: ResourceKeys[], token: string, resources: readonly string[]): Promise<number> {
    const scriptKeys = [...keys.map((k) => k.lock), ...keys.map((k) => k.queue)];
    const channels = keys.map((k) => k.channel);
    const deleted = await Promise.all(
      indexes.map((i) => {
        const node = this.nodes[i] as RedisNode;
        return node.run(scripts.release, scriptKeys, [token, ...channels], this.options.nodeTimeout).then(
          (n) => Number(n) > 0,
          (error: Error) => {
            this.reportNodeError(node, error, 'release', resources);
            return false;
          },
        );
      }),
    );
    return deleted.filter(Boolean).length;
  }

  /**
   * A waiter gives up: leave the queues on every node (waking the next waiter
   * where the lock is free). Best effort: a node that misses it drops our
   * place when its lease runs out. Never throws.
   */
  async dequeue(resources: readonly string[], token: string, indexes: readonly number[] = this.nodes.map((_, i) => i)): Promise<void> {
    const keys = this.keys(resources);
    const scriptKeys = [...keys.map((k) => k.lock), ...keys.map((k) => k.queue), ...keys.map((k) => k.leases)];
    const channels = keys.map((k) => k.channel);
    await Promise.all(
      indexes.map((i) => {
        const node = this.nodes[i] as RedisNode;
        return node.run(scripts.dequeue, scriptKeys, [token, ...channels], this.options.nodeTimeout).catch((error: Error) => {
          this.reportNodeError(node, error, 'dequeue', resources);
        });
      }),
    );
  }

  /** Per node: holder, remaining ms, fence counter, or the node's error. Read-only. */
  inspect(resource: string): Promise<NodeView[]> {
    const [k] = this.keys([resource]) as [ResourceKeys];
    return Promise.all(
      this.nodes.map((node, i) =>
        node
          .run(scripts.inspect, [k.lock, k.fence, this.markerFor(i, [k])], [], this.options.nodeTimeout, FIRST_CONNECT_MS)
          .then((reply) => {
            const [owner, pttl, fence] = arrayReply(reply, 3, node, 'inspect');
            return {
              node: node.name,
              owner: typeof owner === 'string' ? owner : null,
              remaining: typeof owner === 'string' ? Math.max(-1, Number(pttl)) : 0,
              fence: fence === null || fence === undefined ? 0n : parseFence(fence, node),
              error: null,
            };
          })
          .then(
            (view): NodeView => view,
            (error: Error): NodeView => ({ node: node.name, owner: null, remaining: 0, fence: null, error }),
          ),
      ),
    );
  }

  /** Admin: delete the lock key on every node whoever holds it; resolves with how many nodes had it. */
  async forceRelease(resource: string): Promise<{ deleted: number; failures: NodeFailure[] }> {
    const [k] = this.keys([resource]) as [ResourceKeys];
    const failures: NodeFailure[] = [];
    const results = await Promise.all(
      this.nodes.map((node) =>
        node.run(scripts.forceRelease, [k.lock], [k.channel], this.options.nodeTimeout, FIRST_CONNECT_MS).then(
          (n) => Number(n),
          (error: Error) => {
            failures.push({ node: node.name, error });
            this.reportNodeError(node, error, 'forceRelease', [resource]);
            return 0;
          },
        ),
      ),
    );
    return { deleted: results.reduce((a, b) => a + b, 0), failures };
  }
}

/** One node's view of a resource, as `LockManager.inspect` reports it. */
export interface NodeView {
  readonly node: string;
  /** the holder's owner token, or null when free (or on error) */
  readonly owner: string | null;
  /** ms left on the lease (-1: no expiry); 0 when free */
  readonly remaining: number;
  /** the resource's fence counter on this node; null on error */
  readonly fence: bigint | null;
  readonly error: Error | null;
}

/** Fences travel as decimal strings: Lua numbers are doubles and would round counters past 2^53. */
function parseFence(value: unknown, node: RedisNode): bigint {
  const text = String(value);
  if (!/^\d+$/.test(text))
    throw new NodeError(node.name, `fence counter is not a non-negative integer: ${JSON.stringify(text.slice(0, 40))}`);
  return BigInt(text);
}

function parseAcquireReply([ok, value, epoch, age, nodeTrusted, resourcesTrusted, ahead]: unknown[], node: RedisNode): AcquireReply {
  const state: NodeState = {
    epoch: String(epoch),
    age: Number(age),
    nodeTrusted: Number(nodeTrusted) === 1,
    resourcesTrusted: Number(resourcesTrusted) === 1,
  };
  if (Number(ok) === 1) return { kind: 'granted', fence: parseFence(value, node), ...state };
  return { kind: 'held', pttl: Number(value), ahead: Number(ahead) === 1, ...state };
}

/** Script replies are arrays of a known length; anything else is the node's fault, reported as its error. */
function arrayReply(reply: unknown, length: number, node: RedisNode, script: string): unknown[] {
  if (Array.isArray(reply) && reply.length >= length) return reply as unknown[];
  throw new NodeError(node.name, `unexpected ${script} script reply: ${JSON.stringify(reply)}`);
}
