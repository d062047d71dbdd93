import type { RedisNode } from './adapters/index.js';
import { monotonicNow } from '../clock.js';
import { LockTimeoutError, NodeError, QuorumError, type NodeFailure } from '../errors.js';
import { encodeResource, markerKey, slotMarkerFor } from './keys.js';
import { driftOf, type ResolvedAcquire } from '../options.js';
import { scripts } from './scripts/index.js';
import { backoffDelay } from '../backoff.js';
import type { RetryInfo, WaitResult } from '../backend.js';
import { guard, throwIfQuarantineOutlasts } from './wait.js';
import { ANYONE, Wakeup, type ReleaseNotifications, type Watch } from './notifications.js';
import type { NodeReport } from './node-health.js';
import { judge, nameUntrusted, shortOf } from './judge.js';
import { raiseFenceOn } from './lease.js';
import { parseFence } from './replies.js';
import { Redlock, type Attempt, type Grant, type LeaseOps, type NodeErrorReport, type RoundReply } from './redlock.js';
import { countGrants, type GrantCount, type NodeAnswer } from './trust.js';

/**
 * The quorum machinery shared by the semaphore and the read-write lock (the
 * mutex has its own in redlock.ts, with the wait queue on top). One round
 * sends a primitive's acquire script to every node in parallel, each request
 * bounded by nodeTimeout, counts the grants against floor(N/2) + 1 with the
 * mutex's trust rule (trust.ts) and restart quarantine, agrees on the fence
 * (the largest node counter among the grants, written back with raise-fence.lua),
 * and takes the same validity as the mutex:
 *
 *   validity = ttl - elapsed - drift,   drift = floor(ttl * driftFactor) + 2
 *
 * On any failure it releases wherever it may have written before returning.
 */

/** What the rounds of the primitives need from their manager (hold.ts adds what a held lock needs). */
export interface RoundHost {
  readonly redlock: Redlock;
  readonly notifications: ReleaseNotifications;
  readonly reportNodeError: NodeErrorReport;
}

/** The keys of one named primitive that the shared machinery touches; all under the name's hash tag. */
export interface NameKeys {
  readonly name: string;
  /** `<prefix>{<name>}`: a primitive adds its own `:suffix` keys to it */
  readonly base: string;
  /** fencelock 0.1's per-name counter, folded into the node's counter (see _node-state.lua) */
  readonly fence: string;
  /** release notifications */
  readonly channel: string;
  /** the marker on a Cluster node: that of the name's slot (a script may only touch one slot there) */
  readonly slotMarker: string;
  /** the per-node marker */
  readonly marker: string;
}

export function nameKeys(prefix: string, name: string): NameKeys {
  const base = `${prefix}{${encodeResource(name)}}`;
  const fence = `${base}:fence`;
  return {
    name,
    base,
    fence,
    channel: `${base}:released`,
    get slotMarker() {
      return slotMarkerFor(prefix, fence);
    },
    marker: markerKey(prefix),
  };
}

function markerOn(node: RedisNode, keys: NameKeys): string {
  return node.isCluster ? keys.slotMarker : keys.marker;
}

/** The marker the quarantine tracks: the node's one marker (''), or on a Cluster node the name's slot's. */
function scopeOn(node: RedisNode, keys: NameKeys): string {
  return node.isCluster ? keys.slotMarker : '';
}

type NodeState = NodeReport & { readonly epoch: string };

type Reply =
  | ({ kind: 'granted'; fence: bigint; slot: string } & NodeState)
  | ({ kind: 'held'; retryAfter: number } & NodeState)
  | { kind: 'error'; error: Error };

/** One hold of a primitive, as its scripts see it. */
export interface Hold {
  /** the key that holds it: a lease sorted set (permits, readers) or a string (writer) */
  readonly key: string;
  readonly kind: 'zset' | 'string';
  /** the zset member, or the token the string holds */
  readonly member: string;
  /** how lease-release.lua finds it, when not as `kind` and `member` (a permit: by token, whichever slot) */
  readonly releaseAs?: readonly ['permit', string];
  /** a write-intent set the release also leaves */
  readonly alsoLeave?: string;
  /** a reader's writer key: a reader is not written back on a node where a writer holds it (lease-extend.lua) */
  readonly excludedBy?: string;
}

/** One primitive's acquire round. */
export interface Round {
  readonly keys: NameKeys;
  readonly token: string;
  readonly ttl: number;
  /**
   * Runs the primitive's acquire script on a node. `slot`: '' lets the node
   * choose; otherwise the node must grant exactly that slot. `wantAge`: the
   * node reports its marker's age even when trusted. The reply is
   * `{1, fence, epoch, age, trusted, longest ttl, slot?}` or
   * `{0, retryAfter, epoch, age, trusted, longest ttl}`.
   */
  ask(node: RedisNode, marker: string, slot: string, wantAge: boolean): Promise<unknown>;
  /** Ask one node first, and the others for the slot it chose: a semaphore's permit must hold one slot on a quorum. */
  readonly leaderFirst: boolean;
  /** The hold a grant of `slot` is, for extending and releasing it. */
  hold(slot: string): Hold;
  /** Compare-and-delete what this round may have written on one node (any slot). */
  undo(node: RedisNode): Promise<unknown>;
}

/** One acquire round on every node; see the top of this file. On failure it has already released what it took. */
export async function quorumRound(host: RoundHost, round: Round): Promise<Attempt> {
  const { redlock } = host;
  const { nodes, quorum } = redlock;
  const name = round.keys.name;
  redlock.health.used(round.ttl);
  const wantAge = redlock.health.wantAge(monotonicNow());
  const ask = (i: number, slot: string): Promise<Reply> => {
    const node = nodes[i] as RedisNode;
    return round.ask(node, markerOn(node, round.keys), slot, wantAge).then(
      (reply) => parseReply(reply, node),
      (error: Error): Reply => ({ kind: 'error', error }),
    );
  };
  const start = monotonicNow();
  let replies: Reply[];
  if (round.leaderFirst && nodes.length > 1) {
    const leader = redlock.leaderFor([name]);
    const first = await ask(leader, '');
    const slot = first.kind === 'granted' ? first.slot : '';
    replies = await Promise.all(nodes.map((_, i) => (i === leader ? first : ask(i, slot))));
  } else {
    replies = await Promise.all(nodes.map((_, i) => ask(i, '')));
  }

  // The slot most nodes granted is ours; grants of other slots (nodes that chose differently) are contention.
  const votes = new Map<string, number>();
  for (const r of replies) if (r.kind === 'granted') votes.set(r.slot, (votes.get(r.slot) ?? 0) + 1);
  const slot = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';

  const failures: NodeFailure[] = [];
  const judged = replies.map((r): RoundReply => {
    if (r.kind === 'error' || (r.kind === 'granted' && r.slot === slot)) return r;
    // Refused, or granted another slot (a split round): what blocks us there ends after `wait` ms.
    const wait = r.kind === 'held' ? (r.retryAfter < 0 ? Infinity : r.retryAfter) : 0;
    return { ...r, kind: 'held', wait, ahead: false };
  });
  const answers = judge(
    redlock,
    judged,
    nodes.map((node) => scopeOn(node, round.keys)),
    [name],
    failures,
  );
  const count = countGrants(answers, quorum);
  nameUntrusted(redlock, count, failures);
  if (count.counted.length >= quorum) {
    const grant = await agreeOnFence(host, round, slot, start, replies, answers, count, failures);
    if (grant) return { kind: 'acquired', grant };
  }

  // Release wherever our hold may have been written: every node but those that refused.
  await Promise.all(
    nodes.map((node, i) =>
      replies[i]?.kind === 'held'
        ? undefined
        : round.undo(node).catch((error: Error) => host.reportNodeError(node, error, 'release', [name])),
    ),
  );
  if (count.counted.length >= quorum) return { kind: 'expired' };
  return shortOf(redlock, answers, count, failures);
}

/** The mutex's fence agreement (see Redlock.agreeOnFence): the largest counter, written back to whoever had less. */
async function agreeOnFence(
  host: RoundHost,
  round: Round,
  slot: string,
  start: number,
  replies: readonly Reply[],
  answers: readonly NodeAnswer[],
  count: GrantCount,
  failures: NodeFailure[],
): Promise<Grant | undefined> {
  const { redlock } = host;
  const mine = (r: Reply): r is Extract<Reply, { kind: 'granted' }> => r.kind === 'granted' && r.slot === slot;
  const fence = replies.reduce((max, r) => (mine(r) && r.fence > max ? r.fence : max), 0n);
  const repair = replies.flatMap((r, i) => {
    if (r.kind === 'error' || (!mine(r) && !count.bootstrap)) return [];
    const needed = count.bootstrap || (mine(r) && r.fence < fence) || !r.trusted;
    return needed ? [{ i, epoch: r.epoch }] : [];
  });
  const repaired = new Set<number>();
  await Promise.all(
    repair.map(async ({ i, epoch }) => {
      const marker = markerOn(redlock.nodes[i] as RedisNode, round.keys);
      // A node in restart quarantine is never marked trusted: that would hide its data loss from other managers.
      const trust = count.bootstrap && answers[i]?.quarantine === 0;
      if (await raiseFenceOn(redlock, i, marker, fence, epoch, trust, [round.keys.name], failures)) repaired.add(i);
    }),
  );
  const needsRepair = new Set(repair.map(({ i }) => i));
  const confirmed = count.counted.filter((i) => !needsRepair.has(i) || repaired.has(i));
  const validUntil = start + round.ttl - driftOf(round.ttl, redlock.options.driftFactor);
  if (confirmed.length < redlock.quorum || validUntil <= monotonicNow()) return undefined;
  const epochs = replies.map((r) => (mine(r) ? r.epoch : ''));
  const ops = holdOps(host, round.keys, round.hold(slot));
  return { resources: [round.keys.name], token: round.token, fence, ttl: round.ttl, validUntil, epochs, ops };
}

/** Extend and release of one hold, on every node in parallel, each bounded by nodeTimeout. */
function holdOps(host: RoundHost, keys: NameKeys, hold: Hold): LeaseOps {
  const { redlock } = host;
  const timeout = redlock.options.nodeTimeout;
  return {
    async extend(grant, ttl) {
      redlock.health.used(ttl);
      const leaseKeys = (node: RedisNode): string[] =>
        hold.excludedBy ? [hold.key, markerOn(node, keys), hold.excludedBy] : [hold.key, markerOn(node, keys)];
      const start = monotonicNow();
      const failures: NodeFailure[] = [];
      const epochs = [...grant.epochs];
      const results = await Promise.all(
        redlock.nodes.map((node, i) =>
          node.run(scripts.leaseExtend, leaseKeys(node), [hold.kind, hold.member, String(ttl), grant.epochs[i] ?? ''], timeout).then(
            (reply) => {
              const [ok, epoch] = Array.isArray(reply) ? (reply as unknown[]) : [];
              redlock.health.observe(i, typeof epoch === 'string' ? epoch : null, monotonicNow(), scopeOn(node, keys));
              // Held there under this epoch from now on (it may have been written back after a restart).
              if (Number(ok) === 1 && typeof epoch === 'string') epochs[i] = epoch;
              return Number(ok) === 1;
            },
            (error: Error) => {
              failures.push({ node: node.name, error });
              host.reportNodeError(node, error, 'extend', grant.resources);
              return false;
            },
          ),
        ),
      );
      const extended = results.filter(Boolean).length;
      const validUntil = start + ttl - driftOf(ttl, redlock.options.driftFactor);
      if (extended >= redlock.quorum && validUntil > monotonicNow()) return { grant: { ...grant, ttl, validUntil, epochs } };
      return { failures, extended };
    },
    async release(grant) {
      const scriptKeys = hold.alsoLeave ? [hold.key, hold.alsoLeave] : [hold.key];
      const removed = await Promise.all(
        redlock.nodes.map((node) =>
          releaseOn(host, node, scriptKeys, [...(hold.releaseAs ?? [hold.kind, hold.member]), keys.channel], grant.resources).then(
            (n) => n > 0,
          ),
        ),
      );
      return { released: removed.filter(Boolean).length, nodes: redlock.nodes.length };
    },
  };
}

/** lease-release.lua on one node (see that script for KEYS and ARGV); never rejects: a failure is reported and counts 0. */
export function releaseOn(
  host: RoundHost,
  node: RedisNode,
  keys: readonly string[],
  args: readonly string[],
  resources: readonly string[],
): Promise<number> {
  return node.run(scripts.leaseRelease, keys, args, host.redlock.options.nodeTimeout).then(Number, (error: Error) => {
    host.reportNodeError(node, error, 'release', resources);
    return 0;
  });
}

function parseReply(reply: unknown, node: RedisNode): Reply {
  if (!Array.isArray(reply) || reply.length < 6)
    throw new NodeError(node.name, `unexpected acquire script reply: ${JSON.stringify(reply)}`);
  const [ok, value, epoch, age, trusted, longest, slot] = reply as unknown[];
  const state: NodeState = { epoch: String(epoch), age: Number(age), trusted: Number(trusted) === 1, longest: Number(longest) };
  if (Number(ok) !== 1) return { kind: 'held', retryAfter: Number(value), ...state };
  return { kind: 'granted', fence: parseFence(value, node), slot: slot === undefined || slot === null ? '' : String(slot), ...state };
}

/** How one primitive's acquire call runs its rounds. */
export interface HoldRequest {
  readonly keys: NameKeys;
  /** the rounds of one call, with its token and options (`timeout > 0`: it may wait, and a writer then registers its intent) */
  round(token: string, o: ResolvedAcquire): Round;
  /** the call gave up (timeout, abort, QuorumError): undo what its rounds left behind, e.g. a writer's intent */
  giveUp?(token: string): Promise<void>;
}

/** acquire() of a primitive: rounds until one succeeds, waiting between them for a release notification or the backoff. */
export async function waitRounds(
  host: RoundHost,
  request: HoldRequest,
  o: ResolvedAcquire,
  signal: AbortSignal,
  onRetry: (info: RetryInfo) => void,
): Promise<WaitResult> {
  const token = Redlock.newToken();
  const name = request.keys.name;
  const started = monotonicNow();
  const deadline = started + o.timeout;
  const waits = o.timeout > 0;
  const round = request.round(token, o);
  let inFlight: Promise<unknown> = Promise.resolve();
  const once = (): Promise<Attempt> => {
    const work = quorumRound(host, round);
    inFlight = work.catch(() => undefined);
    return guard(host.redlock, work, signal);
  };
  // Any release of this name may free what we wait for: every notification wakes us.
  const wakeup = new Wakeup(undefined);
  const channels = [request.keys.channel];
  const listen = (): Watch => host.notifications.watch(channels, (node) => wakeup.notify(node, ANYONE));
  // Already subscribed here: listen before the first round, so that no release can slip by.
  let watch = waits && host.notifications.isReady(channels) ? listen() : undefined;
  let attempts = 0;
  let retries = 0;
  let noQuorumBefore = false;
  try {
    // Bounded: every pass makes one round and then sleeps, stops at the deadline, or goes again at once
    // (after a first no-quorum round, or right after subscribing), never twice in a row.
    for (;;) {
      attempts++;
      const last = await once();
      if (last.kind === 'acquired') return { grant: last.grant, attempts, waited: monotonicNow() - started };
      if (last.kind === 'no-quorum') {
        // One stall of this process longer than nodeTimeout should not fail a call with time left: one more round at once.
        if (!waits || noQuorumBefore || monotonicNow() >= deadline)
          throw new QuorumError([name], 'acquire', last.successes, last.needed, last.failures);
        noQuorumBefore = true;
        continue;
      }
      throwIfQuarantineOutlasts(last, [name], deadline);
      noQuorumBefore = false;
      const why = last.kind === 'expired' ? 'a quorum answered, but too slowly to leave any validity' : 'held by others';
      if (!waits || monotonicNow() >= deadline) throw new LockTimeoutError([name], o.timeout, why);
      if (!watch) {
        // A release may have come between the round and the subscription: go again once it is in place.
        watch = listen();
        await guard(host.redlock, watch.ready, signal);
        wakeup.reset();
        continue;
      }
      const left = deadline - monotonicNow();
      const backoff = backoffDelay(o.retry, retries++);
      const delay =
        last.kind === 'expired' ? Math.min(backoff, left) : Math.min(last.kind === 'busy' ? backoff : Infinity, last.retryAfter + 1, left);
      const reason = await wakeup.wait(delay, last.kind === 'busy' ? last.busyNodes : 1, signal);
      if (monotonicNow() >= deadline) throw new LockTimeoutError([name], o.timeout, why);
      onRetry({ resources: [name], attempt: retries, reason, waited: monotonicNow() - started });
      wakeup.reset();
    }
  } catch (error) {
    const giveUp = request.giveUp;
    if (giveUp) host.redlock.background(inFlight.then(() => giveUp(token)));
    throw error;
  } finally {
    watch?.stop();
  }
}
