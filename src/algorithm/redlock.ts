import type { RedisNode } from '../adapters/index.js';
import { monotonicNow } from '../clock.js';
import { NodeError, type NodeFailure } from '../errors.js';
import { keysFor, markerKey, slotMarkerFor, type ResourceKeys } from '../keys.js';
import { driftOf, type ResolvedManagerOptions, type WaitForReplicas } from '../options.js';
import { scripts } from '../scripts/index.js';
import { ExtendBatcher, type NodeExtendReply } from './extend-batch.js';
import { NodeHealth, type NodeReport } from './node-health.js';
import { acquireKeys, arrayReply, parseAcquireReply, type AcquireReply, type NodeState } from './replies.js';
import { LocalWaiters } from './notifications.js';
import { randomHex, randomSlice } from './random.js';
import { Repairs } from './repair.js';
import { countGrants, shortfall, type GrantCount, type NodeAnswer } from './trust.js';

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
  'its fence counter is not known to be complete (the node lost its data) and not repaired yet: ' +
  'its grant counts once it is repaired, or while every node answers';

/** Why a quarantined node's grant does not count, and when it will. */
function quarantined(left: number): string {
  const until = new Date(Date.now() + left).toISOString();
  return `lost its data: in restart quarantine, counts again in ${left} ms (at ${until}) (restartQuarantine)`;
}

/** The longest a connection that has never been ready may take for its first handshake. */
export const FIRST_CONNECT_MS = 1_000;

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
  /** restart quarantine: which nodes lost their data, and until when their grants do not count */
  readonly health: NodeHealth;
  /** background repair of nodes that lost their data */
  readonly repairs: Repairs;
  /** this process's waiters, for the handoff shortcut (notifications.ts) */
  readonly localWaiters = new LocalWaiters();
  /** tells the manager of a node's error (the 'nodeError' event) */
  readonly reportNodeError: NodeErrorReport;
  /** node indexes sorted by address: every process picks the same leader whatever order it lists the nodes in */
  private readonly byName: readonly number[];
  /** monotonic time of each node's last failed acquire request */
  private readonly lastFailure: number[];
  /** background cleanups (waiters leaving queues) that close() lets finish before the connections go */
  private readonly cleanups = new Set<Promise<unknown>>();
  /** per standalone node: extensions due together go out as one call (undefined: a Cluster node) */
  private readonly batchers: ReadonlyArray<ExtendBatcher | undefined>;
  /**
   * The highest fence counter seen on any node (grants and busy replies). Sent with every acquire on
   * several nodes: each raises its counter to it first, so the nodes of one round issue the same fence
   * and the round needs no write-back (a round trip) afterwards. Raising a counter is always safe.
   */
  private fenceHint = 0n;
  /**
   * Whether the hint is worth its cost (an HGET per node): the nodes' counters drift apart only when a
   * round does not grant everywhere (contention, a node down), and an uncontended round that granted the
   * same fence everywhere shows they agree again.
   */
  private countersDiffer = false;
  /**
   * Per node, the epoch it last reported, as one string of its own. Every held lock keeps its nodes'
   * epochs; a field split out of a reply can be a slice that keeps the whole reply (or the client's read
   * buffer) alive, so a lock keeps this shared copy instead (see epochOf).
   */
  private readonly epochsSeen: string[] = [];
  /** some node is a Redis Cluster (keys of one call must share a slot; markers per slot) */
  readonly anyCluster: boolean;
  /** the marker scopes of standalone nodes: '' each (see scopeFor) */
  private readonly standaloneScopes: readonly string[];

  constructor(
    readonly nodes: readonly RedisNode[],
    readonly options: ResolvedManagerOptions,
    events: NodeEvents,
  ) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
    this.marker = markerKey(options.keyPrefix);
    this.reportNodeError = events.nodeError;
    this.health = new NodeHealth(options.restartQuarantine, nodes.length, options.driftFactor, (i, left) =>
      events.nodeQuarantined(nodes[i] as RedisNode, left),
    );
    this.repairs = new Repairs({
      nodes,
      quorum: this.quorum,
      nodeTimeout: options.nodeTimeout,
      keyPrefix: options.keyPrefix,
      health: this.health,
      markerOn: (j, scope) => this.markerOn(j, scope),
      repaired: (i, raised, ms) => events.nodeRepaired(nodes[i] as RedisNode, raised, ms),
      reportNodeError: (node, error, operation) => events.nodeError(node, error, operation, []),
    });
    this.byName = nodes
      .map((n, i) => [n.name, i] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, i]) => i);
    this.lastFailure = nodes.map(() => -Infinity);
    this.batchers = nodes.map((node) => (node.isCluster ? undefined : new ExtendBatcher(node, this.marker, options.nodeTimeout)));
    this.anyCluster = nodes.some((n) => n.isCluster);
    this.standaloneScopes = nodes.map(() => '');
  }

  keys(resources: readonly string[]): ResourceKeys[] {
    return resources.map((r) => keysFor(this.options.keyPrefix, r));
  }

  /** The marker (see _node-state.lua) on node i for a lock on `keys`: the node's one, or on a Cluster node its slot's. */
  markerFor(i: number, keys: readonly ResourceKeys[]): string {
    return (this.nodes[i] as RedisNode).isCluster ? slotMarkerFor(this.options.keyPrefix, (keys[0] as ResourceKeys).lock) : this.marker;
  }

  /** Which marker the quarantine tracks for these keys on node i: the node's one (''), or on a Cluster node its slot's. */
  scopeFor(i: number, keys: readonly ResourceKeys[]): string {
    return (this.nodes[i] as RedisNode).isCluster ? this.markerFor(i, keys) : '';
  }

  /**
   * The marker on node j that covers what marker `scope` covers (scope '': a whole standalone node; else a
   * Cluster slot's marker key). A standalone node's counter covers every slot; one slot of a Cluster node
   * does not cover a whole standalone node, so there is none then.
   */
  private markerOn(j: number, scope: string): string | undefined {
    const cluster = (this.nodes[j] as RedisNode).isCluster;
    if (scope === '') return cluster ? undefined : this.marker;
    return cluster ? scope : this.marker;
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
   * One acquire round, read top to bottom: send the acquire script to every node (sendAcquire), judge the
   * replies (trust, restart quarantine: judge + countGrants), agree on the fence and write it back
   * (agreeOnFence), then keep the lock or clean up and say why not (shortfall). On any failure it has
   * already released what it took.
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
    this.health.used(ttl);
    const keys = this.keys(resources);
    const start = monotonicNow();
    const replies = await this.sendAcquire(resources, keys, token, ttl, queue, leaderFirst);
    if (!Array.isArray(replies)) return replies;
    const clear = this.clearGrant(resources, token, ttl, start, replies, keys);
    if (clear) return clear;

    const failures: NodeFailure[] = [];
    const answers = this.judge(
      replies.map((r) => (r.kind === 'held' ? { ...r, wait: r.pttl < 0 || (r.pttl === 0 && r.ahead) ? Infinity : r.pttl } : r)),
      this.nodes.map((_, i) => this.scopeFor(i, keys)),
      resources,
      failures,
    );
    const count = countGrants(answers, this.quorum);
    this.nameUntrusted(count, failures);
    if (count.counted.length >= this.quorum) {
      const grant = await this.agreeOnFence(resources, keys, token, ttl, start, replies, answers, count, failures);
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
    if (count.counted.length >= this.quorum) return { kind: 'expired' };
    return this.shortOf(answers, count, failures);
  }

  /**
   * The common case in a few lines: every node granted, every node is trusted, none is in restart
   * quarantine (node-health.ts says so), and all issued the same fence (their counters agree), with
   * validity left. Nothing to judge, write back or clean up. Anything else (undefined) takes the full
   * path below, which decides the same way in this case.
   */
  private clearGrant(
    resources: readonly string[],
    token: string,
    ttl: number,
    start: number,
    replies: readonly AcquireReply[],
    keys: readonly ResourceKeys[],
  ): Attempt | undefined {
    const first = replies[0];
    if (first?.kind !== 'granted' || this.options.waitForReplicas) return undefined;
    for (const r of replies) {
      if (r.kind !== 'granted' || !r.trusted) return undefined;
      if (r.fence !== first.fence) return void (this.countersDiffer = true);
    }
    const now = monotonicNow();
    if (!this.health.allClear(replies as ReadonlyArray<NodeReport & { readonly epoch: string }>, this.scopesOf(keys), now))
      return undefined;
    const validUntil = start + ttl - driftOf(ttl, this.options.driftFactor);
    if (validUntil <= now) return undefined;
    const epochs = replies.map((r) => (r as { epoch: string }).epoch);
    this.countersDiffer = false;
    return { kind: 'acquired', grant: { resources, token, fence: first.fence, ttl, validUntil, epochs } };
  }

  /** `epoch` as node i's shared copy: the same string for every lock while the node keeps its epoch. */
  private epochOf(i: number, epoch: string): string {
    const seen = this.epochsSeen[i];
    if (seen === epoch) return seen;
    // A new epoch (rare: the first reply, or the node lost its data): copied out, so it holds nothing else.
    const copy = Buffer.from(epoch, 'utf8').toString('utf8');
    this.epochsSeen[i] = copy;
    return copy;
  }

  /** Per node, the marker scope of these keys (see scopeFor); one shared array when no node is a Cluster. */
  private scopesOf(keys: readonly ResourceKeys[]): readonly string[] {
    return this.anyCluster ? this.nodes.map((_, i) => this.scopeFor(i, keys)) : this.standaloneScopes;
  }

  /** The acquire script on every node in parallel (or on the leader first): each node's reply or error. */
  private sendAcquire(
    resources: readonly string[],
    keys: ResourceKeys[],
    token: string,
    ttl: number,
    queue: QueueOptions,
    leaderFirst: boolean,
  ): Promise<AcquireReply[] | Attempt> {
    const start = monotonicNow();
    const args = [
      token,
      String(ttl),
      String(resources.length),
      randomHex(8),
      queue.ticket,
      String(queue.lease),
      queue.fair ? '1' : '0',
      this.health.wantAge(start) ? '1' : '0',
      // Only needed once the nodes' counters have drifted apart (see fenceHint); never on one node.
      this.countersDiffer ? this.fenceHint.toString() : '',
    ];
    // Standalone nodes all take the same keys (their marker has one name); a Cluster node's marker is its slot's.
    const shared = this.anyCluster ? undefined : acquireKeys(keys, this.marker);
    // A connection not yet up (a manager built from URLs a moment ago) may take longer, within what the lease allows.
    const firstConnect = Math.max(this.options.nodeTimeout, Math.min(FIRST_CONNECT_MS, Math.floor(ttl / 3)));
    const ask = (i: number): Promise<AcquireReply> => {
      const node = this.nodes[i] as RedisNode;
      const failed = (error: Error): AcquireReply => {
        this.lastFailure[i] = monotonicNow();
        return { kind: 'error', error };
      };
      const asked = node.run(
        scripts.acquire,
        shared ?? acquireKeys(keys, this.markerFor(i, keys)),
        args,
        this.options.nodeTimeout,
        firstConnect,
      );
      if (!this.options.waitForReplicas)
        return asked.then((reply) => {
          const parsed = parseAcquireReply(reply, node, (epoch) => this.epochOf(i, epoch));
          if (parsed.kind === 'error') this.lastFailure[i] = monotonicNow();
          else if (parsed.counter > this.fenceHint) this.fenceHint = parsed.counter;
          if (parsed.kind !== 'granted' && this.nodes.length > 1) this.countersDiffer = true;
          return parsed;
        }, failed);
      return asked
        .then((reply) => parseAcquireReply(reply, node, (epoch) => this.epochOf(i, epoch)))
        .then((reply) =>
          reply.kind === 'error' ? Promise.reject(reply.error) : reply.kind === 'granted' ? this.replicated(i, keys, reply) : reply,
        )
        .then(undefined, failed);
    };
    if (this.nodes.length === 1) return Promise.all([ask(0)]);
    const leader = leaderFirst ? this.leaderFor(resources) : -1;
    if (leader < 0 || start - (this.lastFailure[leader] as number) <= LEADER_COOLDOWN_MS)
      return Promise.all(this.nodes.map((_, i) => ask(i)));
    return ask(leader).then((first): AcquireReply[] | Attempt | Promise<AcquireReply[]> => {
      if (first.kind === 'held') {
        this.health.observe(leader, first.epoch, monotonicNow(), this.scopeFor(leader, keys));
        return { kind: 'busy', retryAfter: first.pttl < 0 ? Infinity : first.pttl, busyNodes: 1, behind: first.ahead, leader };
      }
      return Promise.all(this.nodes.map((_, i) => (i === leader ? first : ask(i))));
    });
  }

  /**
   * One round's replies as trust.ts counts them: records each node's epoch, applies the restart quarantine
   * (node-health.ts), schedules the repair of nodes that lost their data (repair.ts), and names in
   * `failures` every node whose answer cannot count (errors, quarantines). Shared by every primitive.
   */
  judge(
    replies: ReadonlyArray<RoundReply>,
    scopes: readonly string[],
    resources: readonly string[],
    failures: NodeFailure[],
  ): NodeAnswer[] {
    const now = monotonicNow();
    const reports = replies.map((r) => (r.kind === 'error' ? undefined : r));
    const quarantine = this.health.assess(reports, scopes, now);
    const anyTrusted = reports.some((r) => r?.trusted === true);
    return replies.map((reply, i): NodeAnswer => {
      const node = this.nodes[i] as RedisNode;
      if (reply.kind === 'error') {
        failures.push({ node: node.name, error: reply.error });
        this.reportNodeError(node, reply.error, 'acquire', resources);
        return { kind: 'error', trusted: false, quarantine: 0, wait: 0, ahead: false };
      }
      // Lost its data while others kept theirs: repair it once its quarantine is over.
      const lost = !reply.trusted && anyTrusted && reply.epoch !== null;
      if (lost) this.repairs.schedule(i, scopes[i] ?? '', reply.epoch, quarantine[i] ?? 0);
      const left = reply.kind === 'granted' ? (quarantine[i] ?? 0) : 0;
      if (left > 0) failures.push({ node: node.name, error: new NodeError(node.name, quarantined(left)) });
      // Out of quarantine with its repair under way (two requests): if the round falls short, that is worth a short wait.
      const repair = lost && left === 0 && this.repairs.isPending(i, scopes[i] ?? '') ? 2 * this.options.nodeTimeout : 0;
      const held = reply.kind === 'held';
      return {
        kind: reply.kind,
        trusted: reply.trusted,
        quarantine: left,
        wait: held ? reply.wait : 0,
        ahead: held && reply.ahead,
        repair,
      };
    });
  }

  /** Names the granting nodes whose counters nobody can trust yet, for the QuorumError. */
  nameUntrusted(count: GrantCount, failures: NodeFailure[]): void {
    for (const i of count.untrusted) {
      const name = (this.nodes[i] as RedisNode).name;
      failures.push({ node: name, error: new NodeError(name, UNTRUSTED) });
    }
  }

  /** A round that won no quorum, as an Attempt (see trust.ts shortfall). */
  shortOf(answers: readonly NodeAnswer[], count: GrantCount, failures: NodeFailure[]): Attempt {
    const verdict = shortfall(answers, count, this.quorum);
    if (verdict.kind === 'no-quorum') return { kind: 'no-quorum', successes: count.counted.length, needed: this.quorum, failures };
    if (verdict.kind === 'quarantined') return { ...verdict, successes: count.counted.length, needed: this.quorum, failures };
    return verdict;
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
   * those that had less (and to untrusted ones counted by the "every node
   * answered" rule): the next holder's quorum overlaps ours in at least one
   * trustworthy node, whose counter then already exceeds our fence.
   */
  private async agreeOnFence(
    resources: readonly string[],
    keys: ResourceKeys[],
    token: string,
    ttl: number,
    start: number,
    replies: AcquireReply[],
    answers: readonly NodeAnswer[],
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
      const needed = count.bootstrap || (r.kind === 'granted' && r.fence < fence) || !r.trusted;
      return needed ? [{ i, r }] : [];
    });
    const needsRepair = new Set(repair.map(({ i }) => i));
    // The fence only has to reach a quorum: if enough counted nodes already hold it, nodes that merely lag
    // (they answered "held" last time, so missed an increment) are raised in the background, which saves
    // a round trip on most contended acquires. Repairs of trust (bootstrap, untrusted counters) are awaited.
    const atFence = count.counted.filter((i) => !needsRepair.has(i)).length;
    const lagOnly = (r: AcquireReply): boolean => !count.bootstrap && r.kind === 'granted' && r.trusted;
    const lazy = atFence >= this.quorum ? repair.filter(({ r }) => lagOnly(r)) : [];
    const lazySet = new Set(lazy.map(({ i }) => i));
    const repaired = new Set<number>();
    const raise = async ({ i, r }: { i: number; r: AcquireReply }): Promise<void> => {
      const epoch = r.kind === 'error' ? '' : r.epoch;
      // A node in restart quarantine is never marked trusted: that would hide its data loss from other managers.
      const trust = count.bootstrap && answers[i]?.quarantine === 0;
      if (await this.raiseFenceOn(i, this.markerFor(i, keys), fence, epoch, trust, resources, failures)) repaired.add(i);
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
    this.health.used(ttl);
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
            this.health.observe(i, epoch, monotonicNow(), this.scopeFor(i, keys));
            if (epoch !== null && extended === keys.length) epochs[i] = this.epochOf(i, epoch);
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
   * raise-fence.lua on node i: raise the counter of `marker` to at least `fence` (on bootstrap, also mark
   * the node trusted), refused if the node lost its data since it had `epoch`. Resolves true when done; on
   * failure, records it in `failures`, reports it as a 'fence write-back' node error, and resolves false.
   */
  raiseFenceOn(
    i: number,
    marker: string,
    fence: bigint,
    epoch: string,
    bootstrap: boolean,
    resources: readonly string[],
    failures: NodeFailure[],
  ): Promise<boolean> {
    const node = this.nodes[i] as RedisNode;
    return node
      .run(scripts.raiseFence, [marker], [fence.toString(), epoch, bootstrap ? '1' : '0'], this.options.nodeTimeout)
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
        return this.raiseFenceOn(i, this.markerFor(i, keys), fence, epoch, false, grant.resources, failures);
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
    const lockKeys = keys.map((k) => k.lock);
    const args = [token];
    const deleted = await Promise.all(
      indexes.map((i) => {
        const node = this.nodes[i] as RedisNode;
        return node.run(scripts.release, lockKeys, args, this.options.nodeTimeout).then(
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
}
