import type { RedisNode } from './adapters/index.js';
import { monotonicNow } from '../clock.js';
import { NodeError, type NodeFailure } from '../errors.js';
import { keysFor, markerKey, slotMarkerFor, type ResourceKeys } from './keys.js';
import { driftOf, type ResolvedManagerOptions, type WaitForReplicas } from '../options.js';
import { scripts } from './scripts/index.js';
import { ExtendBatcher } from './extend-batch.js';
import { NodeHealth, type NodeReport } from './node-health.js';
import { acquireKeys, parseAcquireReply, type AcquireReply } from './replies.js';
import { LocalWaiters } from './notifications.js';
import { randomSlice } from '../random.js';
import { Repairs } from './repair.js';
import { judge, nameUntrusted, shortOf } from './judge.js';
import { dequeue, extendGrant, raiseFenceOn, releaseGrant, releaseOn, type Successor } from './lease.js';
import { countGrants, type GrantCount, type NodeAnswer } from './trust.js';
import type { Attempt, Grant, NodeErrorReport, NodeEvents, NodeSet, QueueOptions } from './types.js';

export type { Attempt, Grant, LeaseOps, NodeErrorReport, NodeEvents, QueueOptions, RoundReply } from './types.js';

/**
 * The mutex's acquire round, and the node set it runs on. One node is the
 * single-instance lock; N nodes are Redlock. Every step sends the same request
 * to all nodes in parallel, each bounded by nodeTimeout, and counts answers
 * against the quorum floor(N/2) + 1. Lease arithmetic uses the monotonic clock only:
 *
 *   validity = ttl - elapsed - drift,   drift = floor(ttl * driftFactor) + 2
 *
 * measured from just before the first request left. One round, in the order
 * `acquireOnce` runs it:
 *
 *   sendAcquire     the acquire script on every node (or the leader first)
 *   firstClear      a first attempt's common case, decided by the first quorum heard; the rest heard after
 *   clearGrant      the common case: all granted, all trusted, one fence: done
 *   judge           (judge.ts) which answers count: quarantine, trust, repair
 *   countGrants     (trust.ts) the quorum of trustworthy grants
 *   agreeOnFence    the largest counter, written back where it lags
 *   releaseOn       (lease.ts) a round that failed leaves nothing behind
 *   shortOf         (judge.ts) what a failed round amounts to: busy, no quorum, quarantined
 *
 * After the grant, lease.ts extends and releases it; wait.ts waits between rounds.
 */

/** The longest a connection that has never been ready may take for its first handshake. */
export const FIRST_CONNECT_MS = 1_000;

/** After a leader failed, waiters go straight to all nodes for this long. */
const LEADER_COOLDOWN_MS = 1_000;

const NO_QUEUE: QueueOptions = { fair: true, ticket: '', lease: 0 };

/** One round's replies, with what they were asked for; `start`: a moment before any grant was written (the lease's date). */
interface RoundReplies {
  readonly resources: readonly string[];
  readonly keys: ResourceKeys[];
  readonly token: string;
  readonly ttl: number;
  readonly start: number;
  readonly replies: AcquireReply[];
}

/** A round whose replies are not all in yet: undefined for a node not heard from (see firstClear). */
type HeardReplies = Omit<RoundReplies, 'replies'> & { readonly replies: ReadonlyArray<AcquireReply | undefined> };

export class Redlock implements NodeSet {
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
  /** background work (waiters leaving queues, lagging fence counters raised) that close() lets finish before the connections go */
  private readonly cleanups = new Set<Promise<unknown>>();
  /** per standalone node: extensions due together go out as one call (undefined: a Cluster node) */
  readonly batchers: ReadonlyArray<ExtendBatcher | undefined>;
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
    this.health = new NodeHealth(options.restartQuarantine, nodes.length, options.driftFactor, 2 * options.nodeTimeout, (i, left) =>
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
    return this.markerOfLock(i, (keys[0] as ResourceKeys).lock);
  }

  /** markerFor of the keys whose first lock key is `lock`. */
  markerOfLock(i: number, lock: string): string {
    return (this.nodes[i] as RedisNode).isCluster ? slotMarkerFor(this.options.keyPrefix, lock) : this.marker;
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

  /**
   * A mutex owner token: this manager's id, a '.', then 144 random bits (base64url, which has no '.'). The '.'
   * tells a release that this waiter takes a grant message as its wake-up, so the token alone, which wakes a
   * waiter of an older fencelock, need not follow it (_handover.lua).
   */
  waiterToken(): string {
    return `${this.managerId}.${Redlock.newToken()}`;
  }

  /** The channel on which releases of these resources wake this manager's waiters (their turn has come). */
  managerChannel(channel: string): string {
    return `${channel}:${this.managerId}`;
  }

  /**
   * One acquire round, read top to bottom: send the acquire script to every node (sendAcquire), judge the
   * replies (trust, restart quarantine: judge + countGrants), agree on the fence and write it back
   * (agreeOnFence), then keep the lock or clean up and say why not (judge.ts shortOf). On any failure it has
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
  acquireOnce(
    resources: readonly string[],
    token: string,
    ttl: number,
    queue: QueueOptions = NO_QUEUE,
    leaderFirst = false,
  ): Promise<Attempt> {
    this.health.used(ttl);
    const keys = this.keys(resources);
    const start = monotonicNow();
    // No async frame: an uncontended round ends in clearGrant, with one promise reaction and nothing else.
    return this.sendAcquire(resources, keys, token, ttl, start, queue, leaderFirst).then((replies) =>
      Array.isArray(replies) ? this.decide({ resources, keys, token, ttl, start, replies }, queue) : replies,
    );
  }

  /**
   * What the nodes' replies to one round amount to (acquireOnce, or a release that granted this process's
   * next caller: releaseTo).
   */
  private decide(round: RoundReplies, queue: QueueOptions): Attempt | Promise<Attempt> {
    return this.clearGrant(round) ?? this.judgeRound(round, queue);
  }

  /** decide's full path: judge every reply, count the quorum, agree on the fence, or clean up and say why not. */
  private async judgeRound(round: RoundReplies, queue: QueueOptions): Promise<Attempt> {
    const { resources, keys, token, replies } = round;
    const failures: NodeFailure[] = [];
    const answers = this.judged(round, failures);
    const count = countGrants(answers, this.quorum);
    nameUntrusted(this, count, failures);
    if (count.counted.length >= this.quorum) {
      const grant = await this.agreeOnFence(round, answers, count, failures);
      if (grant) {
        // Nodes that said "held" (the last holder's key was still there) queued us: leave those queues,
        // or we would stand first in line there, holding up the next waiter until our place lapses.
        const queuedOn = replies.flatMap((r, i) => (r.kind === 'held' && queue.ticket !== '' ? [i] : []));
        if (queuedOn.length > 0) this.background(dequeue(this, resources, token, false, queuedOn));
        return { kind: 'acquired', grant };
      }
    }

    // Release wherever the key may have been written: winners, quarantined
    // nodes and nodes whose answer we never saw. Nodes that answered "held" wrote nothing.
    const touched = this.nodes.map((_, i) => i).filter((i) => replies[i]?.kind !== 'held');
    await releaseOn(
      this,
      touched,
      keys.map((k) => k.lock),
      token,
      resources,
    );
    if (count.counted.length >= this.quorum) return { kind: 'expired' };
    return shortOf(this, answers, count, failures);
  }

  /** The round's replies as judge.ts sees them (with how long each busy node asks us to wait), judged. */
  private judged({ resources, keys, replies }: RoundReplies, failures: NodeFailure[]): NodeAnswer[] {
    return judge(
      this,
      replies.map((r) => (r.kind === 'held' ? { ...r, wait: r.pttl < 0 || (r.pttl === 0 && r.ahead) ? Infinity : r.pttl } : r)),
      this.nodes.map((_, i) => this.scopeFor(i, keys)),
      resources,
      failures,
    );
  }

  /**
   * The common case in a few lines: every node granted, every node is trusted, none is in restart
   * quarantine (node-health.ts says so), and all issued the same fence (their counters agree), with
   * validity left. Nothing to judge, write back or clean up. Anything else (undefined) takes the full
   * path below, which decides the same way in this case.
   */
  private clearGrant(round: RoundReplies): Attempt | undefined {
    const grant = this.agreedGrant(round);
    if (grant === 'fences differ') return void (this.countersDiffer = true);
    if (!grant) return undefined;
    this.countersDiffer = false;
    return { kind: 'acquired', grant };
  }

  /**
   * clearGrant's and clearHanded's test, in one place: every reply a grant of a trusted node, all with one
   * fence, none of the nodes in restart quarantine (node-health.ts), validity left. Given `pending`, replies
   * "held" are allowed too (a handed round's nodes not heard yet: see clearHanded), their indexes pushed there,
   * as long as the grants still make a quorum. 'fences differ': the grants disagree on the fence.
   */
  private agreedGrant(
    { resources, keys, token, ttl, start, replies }: HeardReplies,
    pending?: number[],
  ): Grant | 'fences differ' | undefined {
    if (this.options.waitForReplicas) return undefined;
    let fence: bigint | undefined;
    let granted = 0;
    // An index loop: the uncontended acquire passes here, and entries() would allocate a pair per node.
    for (let i = 0; i < replies.length; i++) {
      const r = replies[i];
      if (r === undefined) continue;
      if (r.kind === 'held' && pending) pending.push(i);
      else if (r.kind !== 'granted' || !r.trusted) return undefined;
      else if (fence === undefined) fence = r.fence;
      else if (r.fence !== fence) return 'fences differ';
      if (r.kind === 'granted') granted++;
    }
    if (fence === undefined || granted < this.quorum) return undefined;
    const now = monotonicNow();
    if (!this.health.allClear(replies as ReadonlyArray<(NodeReport & { readonly epoch: string }) | undefined>, this.scopesOf(keys), now))
      return undefined;
    const validUntil = start + ttl - driftOf(ttl, this.options.driftFactor);
    if (validUntil <= now) return undefined;
    const epochs = replies.map((r) => (r?.kind === 'granted' ? r.epoch : ''));
    return { resources, token, fence, ttl, validUntil, epochs };
  }

  /**
   * The grants releases handed us (their messages, `grants`, per node: handed-grant.ts), dated by
   * `queue.marks`, judged as an acquire round's replies (decide) with the validity a handed key has:
   * `validFor` ms (what the queued attempt that dates it left of our place) from that date. The grant keeps its `ttl`, and is
   * provisional until the lock extends it to that. Undefined when the grants cannot be dated, or leave less
   * than half of `validFor`: the waiter confirms with an attempt instead. The common case (clearHanded) is
   * decided at once, without a promise; only a round judged in full (decide) may have to wait for the nodes.
   */
  takeHanded(
    resources: readonly string[],
    token: string,
    ttl: number,
    validFor: number,
    grants: ReadonlyArray<string | undefined>,
    queue: QueueOptions,
  ): Attempt | Promise<Attempt> | undefined {
    const parsed = grants.map((text, i) => (text === undefined ? undefined : this.parsed(i, text)));
    const dated = queue.marks?.roundOf(parsed, this.nodes.length, this.quorum);
    if (!dated || dated.start + validFor / 2 - driftOf(validFor, this.options.driftFactor) <= monotonicNow()) return undefined;
    for (const [i, reply] of parsed.entries()) if (reply) this.noted(i, reply);
    const round = { resources, keys: this.keys(resources), token, ttl: validFor, ...dated };
    const clear = this.clearHanded(round, queue);
    if (clear) return { kind: 'acquired', grant: { ...clear, ttl }, provisional: true };
    return Promise.resolve(this.decide(round, queue)).then((attempt) =>
      attempt.kind === 'acquired' ? { kind: 'acquired', grant: { ...attempt.grant, ttl }, provisional: true } : attempt,
    );
  }

  /**
   * takeHanded's common case on several nodes, as clearGrant is an acquire round's: the grants heard make a
   * quorum, all with one fence, every node trusted (roundOf checked the rest's last replies) and none in
   * restart quarantine. judgeRound would decide the same. The nodes whose message has not arrived yet answered
   * our last attempt "held": their release went out with the others, and each will hand its key to us there
   * (the top-up extends it). Only a node whose release did not run keeps our place: we leave it in the
   * background, after this turn, off the caller's way (judgeRound does it at once).
   */
  private clearHanded(round: RoundReplies, queue: QueueOptions): Grant | undefined {
    const pending: number[] = [];
    const grant = this.agreedGrant(round, pending);
    if (!grant || grant === 'fences differ') return undefined;
    if (pending.length > 0 && queue.ticket !== '')
      this.background(
        new Promise((resolve) => setImmediate(resolve)).then(() => dequeue(this, round.resources, round.token, false, pending)),
      );
    return grant;
  }

  /**
   * The planted flaw `wakeupGrant` (planted-flaws.ts, chaos only): the grant a waiter would count on if it took
   * its wake-up as one, unconfirmed. Never used otherwise.
   */
  unconfirmedGrant(resources: readonly string[], token: string, ttl: number): Grant {
    const validUntil = monotonicNow() + ttl - driftOf(ttl, this.options.driftFactor);
    const epochs = this.nodes.map((_, i) => this.epochsSeen[i] ?? '');
    return { resources, token, fence: this.fenceHint + 1n, ttl, validUntil, epochs };
  }

  /** `epoch` as node i's shared copy: the same string for every lock while the node keeps its epoch. */
  epochOf(i: number, epoch: string): string {
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
    start: number,
    queue: QueueOptions,
    leaderFirst: boolean,
  ): Promise<AcquireReply[] | Attempt> {
    const args = acquireArgs(token, ttl, queue, this.health.wantAge(start), this.countersDiffer ? this.fenceHint : undefined);
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
      if (!this.options.waitForReplicas) {
        const marks = queue.marks;
        if (!marks) return asked.then((reply) => this.noted(i, this.parsed(i, reply)), failed);
        return asked.then((reply) => {
          const parsed = this.noted(i, this.parsed(i, reply));
          if (parsed.kind === 'held') marks.note(i, start, parsed);
          return parsed;
        }, failed);
      }
      return asked
        .then((reply) => this.parsed(i, reply))
        .then((reply) =>
          reply.kind === 'error' ? Promise.reject(reply.error) : reply.kind === 'granted' ? this.replicated(i, keys, reply) : reply,
        )
        .then(undefined, failed);
    };
    if (this.nodes.length === 1) return ask(0).then(oneReply);
    const leader = leaderFirst ? this.leaderFor(resources) : -1;
    if (leader < 0 || start - (this.lastFailure[leader] as number) <= LEADER_COOLDOWN_MS) {
      const asked = this.nodes.map((_, i) => ask(i));
      // A first attempt that queues nowhere may be decided by the replies heard first (firstClear).
      if (queue.ticket !== '' || queue.watch || queue.marks) return Promise.all(asked);
      return this.firstClear(asked, { resources, keys, token, ttl, start });
    }
    return ask(leader).then((first): AcquireReply[] | Attempt | Promise<AcquireReply[]> => {
      if (first.kind === 'held') {
        this.health.observe(leader, first.epoch, monotonicNow(), this.scopeFor(leader, keys));
        return { kind: 'busy', retryAfter: first.pttl < 0 ? Infinity : first.pttl, busyNodes: 1, behind: first.ahead, leader };
      }
      return Promise.all(this.nodes.map((_, i) => (i === leader ? first : ask(i))));
    });
  }

  /**
   * One first attempt's replies, decided as soon as they can be (atFirstQuorum): the round's grant once the
   * replies heard so far make a clear one, else every reply once all are in, for decide. A slow node then delays
   * no acquire: the quorum is what Redlock counts, and the fence agreed by a quorum is above every earlier
   * holder's (their quorum overlaps ours). Only an attempt that queues nowhere: a "held" reply heard late then
   * took no place in a queue that would need leaving.
   */
  private firstClear(asked: ReadonlyArray<Promise<AcquireReply>>, round: Omit<HeardReplies, 'replies'>): Promise<AcquireReply[] | Attempt> {
    return new Promise((resolve) =>
      this.atFirstQuorum(asked, round, sameReply, (decided) =>
        resolve(Array.isArray(decided) ? (decided as AcquireReply[]) : { kind: 'acquired', grant: decided }),
      ),
    );
  }

  /**
   * The replies of one request sent to every node (`asked`, each made an acquire reply by `toReply`, undefined
   * for a node that gave none), decided as soon as they can be: `decided` gets the grant once the replies heard
   * so far make a clear one (agreedGrant), else every reply once all are in. The rest are heard after the grant
   * (lateReply); `lateHeld(i)` for a late "held" (node i put the caller in its queue: a place to leave). Once all
   * are in, a round with a late reply the clear path would not have taken is judged as judgeRound judges one
   * (judge.ts: errors reported, epochs recorded, quarantines announced, repairs scheduled), for those effects
   * alone; not when some node gave no reply (its error is the caller's to report). For firstClear and
   * handedAtQuorum.
   */
  private atFirstQuorum<T>(
    asked: ReadonlyArray<Promise<T>>,
    round: Omit<HeardReplies, 'replies'>,
    toReply: (i: number, value: T) => AcquireReply | undefined,
    decided: (outcome: Grant | Array<AcquireReply | undefined>) => void,
    lateHeld?: (i: number) => void,
  ): void {
    const replies: Array<AcquireReply | undefined> = new Array<AcquireReply | undefined>(asked.length).fill(undefined);
    // One round object for every look at it: `replies` fills in as the nodes answer.
    const heardSoFar: HeardReplies = { ...round, replies };
    let heard = 0;
    let grant: Grant | undefined;
    let unclear = false;
    let missing = false;
    for (let i = 0; i < asked.length; i++) {
      (asked[i] as Promise<T>).then((value) => {
        heard++;
        const reply = toReply(i, value);
        replies[i] = reply;
        if (reply === undefined) missing = true;
        if (grant) {
          if (reply && !this.lateReply(i, reply, grant, round)) {
            unclear = true;
            if (reply.kind === 'held') lateHeld?.(i);
          }
          // Every node has answered now: no reply is undefined any more, unless a node gave none.
          if (heard === asked.length && unclear && !missing) this.judged(heardSoFar as RoundReplies, []);
          return;
        }
        if (heard === asked.length) return decided(replies);
        // As with any reply but a grant heard first (agreedGrant), a node that gave none leaves the round to decide.
        if (missing || heard < this.quorum || reply?.kind !== 'granted') return;
        const clear = this.agreedGrant(heardSoFar);
        if (clear === undefined || clear === 'fences differ') return;
        grant = clear;
        this.countersDiffer = false;
        decided(grant);
      });
    }
  }

  /**
   * A reply heard after firstClear decided its round; true when it is one the clear path takes (a grant with
   * the round's fence from a node as trusted as before), which joins the grant's epochs (extend's write-back
   * after a reset needs them). A node that granted with less than the round's fence, or with an untrusted
   * counter, ran the increment too: as agreeOnFence does, its counter is raised to the fence (in the
   * background, as for a node that merely lags there), so that it is not left below a fence it took part in
   * (a later bootstrap over the untrusted nodes, once the trusted ones lost their data, would count it).
   */
  private lateReply(i: number, reply: AcquireReply, grant: Grant, round: Omit<HeardReplies, 'replies'>): boolean {
    if (reply.kind !== 'granted') return false;
    if (reply.trusted && reply.fence === grant.fence && this.health.known(i, reply.epoch, this.scopeFor(i, round.keys))) {
      // The grant's own array (agreedGrant built it for this round), shared by every copy of the grant.
      (grant.epochs as string[])[i] = reply.epoch;
      return true;
    }
    this.countersDiffer = true;
    if (reply.fence < grant.fence || !reply.trusted) {
      const marker = this.markerFor(i, round.keys);
      this.background(raiseFenceOn(this, i, marker, grant.fence, reply.epoch, false, round.resources, []));
    }
    return false;
  }

  /** Node i's acquire script reply, parsed, its epoch as the node's shared copy (epochOf). */
  private parsed(i: number, reply: unknown): AcquireReply {
    return parseAcquireReply(reply, this.nodes[i] as RedisNode, (epoch) => this.epochOf(i, epoch));
  }

  /** One node's acquire reply, noted: its fence counter for the hint (see fenceHint), its failure for the leader's cooldown. */
  private noted(i: number, parsed: AcquireReply): AcquireReply {
    if (parsed.kind === 'error') this.lastFailure[i] = monotonicNow();
    else if (parsed.counter > this.fenceHint) this.fenceHint = parsed.counter;
    if (parsed.kind !== 'granted' && this.nodes.length > 1) this.countersDiffer = true;
    return parsed;
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
    { resources, keys, token, ttl, start, replies }: RoundReplies,
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
      if (await raiseFenceOn(this, i, this.markerFor(i, keys), fence, epoch, trust, resources, failures)) repaired.add(i);
    };
    // Tracked, so that close() waits for these writes before it closes the connections they go out on.
    for (const lagging of lazy) this.background(raise(lagging));
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

  /** Compare-and-extend on all nodes (lease.ts): the new grant when a quorum extended with validity left. */
  extend(grant: Grant, ttl: number): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
    return extendGrant(this, grant, ttl);
  }

  /**
   * This process's next caller for a one-resource lock, when one is parked behind the holder (set by the
   * backend from local-queue.ts): a release grants it the lock (lease.ts Successor, releaseTo).
   */
  successorFor: (resource: string) => Successor | undefined = () => undefined;

  /** Compare-and-delete on every node, handing over to the next waiter (lease.ts, release.lua); never throws. */
  release(grant: Grant): Promise<{ released: number; nodes: number }> {
    // waitForReplicas: a grant counts only once replicas confirm it, which a release reply cannot say.
    const successor =
      grant.resources.length === 1 && !this.options.waitForReplicas ? this.successorFor(grant.resources[0] as string) : undefined;
    return successor ? this.releaseTo(grant, successor) : releaseGrant(this, grant);
  }

  /**
   * The release that grants this process's next caller the lock where it arrived before every waiter queued
   * on a node, and elsewhere takes its place in that node's queue (release.lua): a hand-over inside the process
   * costs no round of its own, and neither does the caller's place in line behind another process's waiter.
   * The replies are judged as an acquire round's (handedAtQuorum), sent at this release's send time: it came before
   * every grant the release wrote (the lease's date), and before every grant handed later to a place it took
   * (its "queued" replies are noted for handed-grant.ts). Anything else (our key was gone, a node error, a
   * round that failed) leaves the caller to its own round, which takes a key holding its token as its own
   * (acquire.lua) and keeps a place already taken.
   */
  private releaseTo(grant: Grant, successor: Successor): Promise<{ released: number; nodes: number }> {
    const { resources, token } = grant;
    const keys = this.keys(resources);
    this.health.used(successor.ttl);
    const start = monotonicNow();
    const hint = this.countersDiffer && this.fenceHint > grant.fence ? this.fenceHint : grant.fence;
    const wantAge = this.health.wantAge(start) ? '1' : '0';
    const args = [token, hint.toString(), successor.token, successor.ticket, String(successor.ttl), wantAge, String(successor.lease)];
    const outcomes = this.nodes.map((node, i) =>
      node.run(scripts.release, [(keys[0] as ResourceKeys).lock, this.markerFor(i, keys)], args, this.options.nodeTimeout).then(
        (reply) => reply,
        (error: Error) => error,
      ),
    );
    successor.handed(this.handedAtQuorum(outcomes, { resources, keys, token: successor.token, ttl: successor.ttl, start }, successor));
    return Promise.all(outcomes).then((outcomes) => {
      let released = 0;
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome instanceof Error) this.reportNodeError(this.nodes[i] as RedisNode, outcome, 'release', resources);
        else if (typeof outcome === 'string' || Number(outcome) > 0) released++;
      }
      return { released, nodes: this.nodes.length };
    });
  }

  /**
   * What a release did for this process's next caller (releaseTo), decided as firstClear decides a first
   * attempt (atFirstQuorum): once the replies heard so far are a clear grant to it, it has the lock, and a slow
   * node delays no hand-over. Else, once every node has answered, the replies are judged in full (decide): the
   * lock, or its places taken in line (busy). Undefined when some node's release handed it nothing before a
   * grant was clear (our key was gone there, or an error: the release reports that one): the caller makes its
   * own round. A node that queued it behind another process's waiter, heard after the grant, keeps its place there:
   * it leaves that queue in the background, as judgeRound's winner does.
   */
  private handedAtQuorum(
    outcomes: ReadonlyArray<Promise<unknown>>,
    round: Omit<HeardReplies, 'replies'>,
    successor: Successor,
  ): Promise<Attempt | undefined> {
    const queued = { fair: true, ticket: successor.ticket, lease: successor.lease };
    const toReply = (i: number, outcome: unknown): AcquireReply | undefined => {
      if (typeof outcome !== 'string') return undefined;
      const reply = this.noted(i, this.parsed(i, outcome));
      if (reply.kind === 'held') successor.marks.note(i, round.start, reply);
      return reply;
    };
    const leave = (i: number): void => this.background(dequeue(this, round.resources, round.token, false, [i]));
    return new Promise((resolve) =>
      this.atFirstQuorum(
        outcomes,
        round,
        toReply,
        (decided) => {
          if (!Array.isArray(decided)) return resolve({ kind: 'acquired', grant: decided });
          if (decided.includes(undefined)) return resolve(undefined);
          void Promise.resolve(this.decide({ ...round, replies: decided as AcquireReply[] }, queued)).then((attempt) =>
            resolve(attempt.kind === 'acquired' || attempt.kind === 'busy' ? attempt : undefined),
          );
        },
        leave,
      ),
    );
  }
}

/**
 * acquire.lua's arguments, its trailing optional ones left out where they would say their default: a first
 * attempt with nothing to queue, no quarantine to watch and counters that agree sends token and ttl alone.
 * `hint`: the highest fence seen, needed only once the nodes' counters have drifted apart (see fenceHint).
 */
export function acquireArgs(token: string, ttl: number, queue: QueueOptions, wantAge: boolean, hint: bigint | undefined): string[] {
  const fair = queue.fair ? '1' : queue.watch ? 'w' : '0';
  if (queue.ticket === '' && fair === '1') {
    if (!wantAge && hint === undefined) return [token, String(ttl)];
    return [token, String(ttl), ...stateArgs(wantAge, hint)];
  }
  return [token, String(ttl), ...stateArgs(wantAge, hint), queue.ticket, String(queue.lease), fair];
}

/** The fence hint ('' for none) and whether the node should report its marker's age: acquire.lua's and release.lua's grant arguments. */
function stateArgs(wantAge: boolean, hint: bigint | undefined): [string, string] {
  return [hint === undefined ? '' : hint.toString(), wantAge ? '1' : '0'];
}

/** firstClear's replies as they come (atFirstQuorum's toReply). */
const sameReply = (_i: number, reply: AcquireReply): AcquireReply => reply;

/** The single-instance lock's round: its one reply as the round's list (cheaper than a Promise.all of one). */
const oneReply = (reply: AcquireReply): AcquireReply[] => [reply];
