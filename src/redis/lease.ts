// The lease side of the mutex, after a grant: extend it (compare-and-extend), release it
// (compare-and-delete), raise a fence counter (write-back and multi-slot fences), and leave a wait queue.
// Each asks every node in parallel, bounded by nodeTimeout, and reports node errors; none throws.
import { monotonicNow } from '../clock.js';
import { NodeError, type NodeFailure } from '../errors.js';
import { driftOf } from '../options.js';
import type { RedisNode } from './adapters/index.js';
import type { NodeExtendReply } from './extend-batch.js';
import { lockKey } from './keys.js';
import type { Attempt, Grant, NodeSet } from './types.js';
import type { BusyMarks } from './handed-grant.js';
import { arrayReply } from './replies.js';
import { scripts } from './scripts/index.js';

/**
 * Compare-and-extend on all nodes. Resolves with the new grant when a quorum
 * extended and validity is left; otherwise with the failures, and the lock is lost.
 */
export async function extendGrant(
  redlock: NodeSet,
  grant: Grant,
  ttl: number,
): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
  redlock.health.used(ttl);
  const keys = redlock.keys(grant.resources);
  const keyArgs = (i: number): string[] => [...keys.map((k) => k.lock), redlock.markerFor(i, keys)];
  const start = monotonicNow();
  const failures: NodeFailure[] = [];
  const epochs = [...grant.epochs];
  const lockKeys = keys.map((k) => k.lock);
  const extendOn = (i: number): Promise<NodeExtendReply> => {
    const batcher = redlock.batchers[i];
    const epoch = grant.epochs[i] ?? '';
    if (batcher) return batcher.extend(lockKeys, grant.token, ttl, epoch);
    const node = redlock.nodes[i] as RedisNode;
    return node
      .run(scripts.extend, keyArgs(i), [grant.token, String(ttl), epoch], redlock.options.nodeTimeout)
      .then((reply) => arrayReply(reply, 2, node, 'extend'))
      .then(([extended, e]) => ({ extended: Number(extended), epoch: typeof e === 'string' ? e : null }));
  };
  const counts = await Promise.all(
    redlock.nodes.map((node, i) =>
      extendOn(i).then(
        ({ extended, epoch }) => {
          redlock.health.observe(i, epoch, monotonicNow(), redlock.scopeFor(i, keys));
          if (epoch !== null && extended === keys.length) epochs[i] = redlock.epochOf(i, epoch);
          return extended;
        },
        (error: Error) => {
          failures.push({ node: node.name, error });
          redlock.reportNodeError(node, error, 'extend', grant.resources);
          return 0;
        },
      ),
    ),
  );
  const extended = counts.filter((c) => c === keys.length).length;
  const validUntil = start + ttl - driftOf(ttl, redlock.options.driftFactor);
  if (extended >= redlock.quorum && validUntil > monotonicNow()) {
    return { grant: { ...grant, ttl, validUntil, epochs } };
  }
  return { failures, extended };
}

/**
 * raise-fence.lua on node i: raise the counter of `marker` to at least `fence` (on bootstrap, also mark
 * the node trusted), refused if the node lost its data since it had `epoch`. Resolves true when done; on
 * failure, records it in `failures`, reports it as a 'fence write-back' node error, and resolves false.
 */
export function raiseFenceOn(
  redlock: NodeSet,
  i: number,
  marker: string,
  fence: bigint,
  epoch: string,
  bootstrap: boolean,
  resources: readonly string[],
  failures: NodeFailure[],
): Promise<boolean> {
  const node = redlock.nodes[i] as RedisNode;
  return node
    .run(scripts.raiseFence, [marker], [fence.toString(), epoch, bootstrap ? '1' : '0'], redlock.options.nodeTimeout)
    .then((ok) => {
      if (Number(ok) !== 1) throw new NodeError(node.name, 'lost its data during the acquire (fence write-back refused)');
      return true;
    })
    .catch((error: Error) => {
      failures.push({ node: node.name, error });
      redlock.reportNodeError(node, error, 'fence write-back', resources);
      return false;
    });
}

/**
 * Raise the grant's fence counters to `fence` on every node that granted it (a multi-slot lock's one
 * fence, see cross-slot.ts). ok once a quorum raised them.
 */
export async function raiseFence(redlock: NodeSet, grant: Grant, fence: bigint): Promise<{ ok: boolean; failures: NodeFailure[] }> {
  const keys = redlock.keys(grant.resources);
  const failures: NodeFailure[] = [];
  const raised = await Promise.all(
    redlock.nodes.map((_, i) => {
      const epoch = grant.epochs[i];
      if (!epoch) return false;
      return raiseFenceOn(redlock, i, redlock.markerFor(i, keys), fence, epoch, false, grant.resources, failures);
    }),
  );
  return { ok: raised.filter(Boolean).length >= redlock.quorum, failures };
}

/**
 * A caller of the releasing process next in line for a one-resource lock, not yet in the nodes' queue
 * (local-queue.ts): release.lua grants it the lock when it arrived before every waiter queued on the node,
 * and otherwise takes its place in that queue for it (redlock.ts releaseTo).
 */
export interface Successor {
  readonly token: string;
  /** its arrival (wait.ts ticketAt) */
  readonly ticket: string;
  /** the ttl it asked for */
  readonly ttl: number;
  /** its queue lease (wait.ts queueLease): how long the place the release takes for it lasts */
  readonly lease: number;
  /** where the release's "queued" replies are noted: they date the grants it is handed later (handed-grant.ts) */
  readonly marks: BusyMarks;
  /**
   * takes what the release did for it: the lock acquired, or queued behind another process's waiter (busy,
   * its place taken), or undefined when it must make its own round
   */
  handed(attempt: Promise<Attempt | undefined>): void;
}

/** Compare-and-delete on every node, handing each node's key to its next waiter (release.lua); never throws. */
export function releaseGrant(redlock: NodeSet, grant: Grant): Promise<{ released: number; nodes: number }> {
  const prefix = redlock.options.keyPrefix;
  const nodes = redlock.nodes.length;
  if (grant.resources.length === 1) return releaseHanding(redlock, grant).then((released) => ({ released, nodes }));
  const lockKeys = grant.resources.map((r) => lockKey(prefix, r));
  return releaseOn(redlock, undefined, lockKeys, grant.token, grant.resources).then((released) => ({ released, nodes }));
}

/**
 * The release of a one-resource grant: with each node's marker and our fence as the hint, so that a waiter
 * of another process queued there is granted the lock by the release itself (release.lua, _handover.lua).
 * On one node there is no other node's fence to agree with: no hint.
 */
function releaseHanding(redlock: NodeSet, grant: Grant): Promise<number> {
  const lock = lockKey(redlock.options.keyPrefix, grant.resources[0] as string);
  const args = [grant.token, redlock.nodes.length > 1 ? grant.fence.toString() : ''];
  // Standalone nodes share one marker name: one KEYS array for all of them, and no function per call.
  if (!redlock.anyCluster) return releaseOn(redlock, undefined, [lock, redlock.markerOfLock(0, lock)], grant.token, grant.resources, args);
  return releaseOn(redlock, undefined, [lock], grant.token, grant.resources, args, (i) => [lock, redlock.markerOfLock(i, lock)]);
}

/**
 * Compare-and-delete of `lockKeys` on the nodes `indexes` (every node when undefined); resolves with how many
 * deleted (or handed over) at least one key. Node errors are reported, never thrown. No closure per node: a
 * release is half of every acquire+release.
 */
export function releaseOn(
  redlock: NodeSet,
  indexes: readonly number[] | undefined,
  lockKeys: readonly string[],
  token: string,
  resources: readonly string[],
  args: readonly string[] = [token],
  keysOn: (i: number) => readonly string[] = () => lockKeys,
): Promise<number> {
  const timeout = redlock.options.nodeTimeout;
  const count = indexes?.length ?? redlock.nodes.length;
  if (count === 1) {
    // One node (the single-instance lock): its reply is the outcome, with no Promise.all around it.
    const i = indexes ? (indexes[0] as number) : 0;
    const node = redlock.nodes[i] as RedisNode;
    return node.run(scripts.release, keysOn(i), args, timeout).then(
      (reply) => (deletedAny(reply) ? 1 : 0),
      (error: Error) => {
        redlock.reportNodeError(node, error, 'release', resources);
        return 0;
      },
    );
  }
  const asked: Array<Promise<boolean | Error>> = [];
  for (let k = 0; k < count; k++) {
    const i = indexes ? (indexes[k] as number) : k;
    asked.push((redlock.nodes[i] as RedisNode).run(scripts.release, keysOn(i), args, timeout).then(deletedAny, asError));
  }
  return Promise.all(asked).then((outcomes) => {
    let released = 0;
    for (let k = 0; k < count; k++) {
      const outcome = outcomes[k];
      if (outcome === true) released++;
      else if (outcome instanceof Error)
        redlock.reportNodeError(redlock.nodes[indexes ? (indexes[k] as number) : k] as RedisNode, outcome, 'release', resources);
    }
    return released;
  });
}

const deletedAny = (reply: unknown): boolean => Number(reply) > 0;
const asError = (error: Error): Error => error;

/**
 * Leave the queues on the given nodes (waking the next waiter where the lock is free): a waiter that gives
 * up (`givingUp`: a lock a release handed it meanwhile is passed on, see dequeue.lua), or one that holds
 * the lock on a quorum and was still queued elsewhere (a key handed to it there stays its own). Best
 * effort: a node that misses it drops our place when its lease runs out. Never throws.
 */
export async function dequeue(
  redlock: NodeSet,
  resources: readonly string[],
  token: string,
  givingUp: boolean,
  indexes: readonly number[] = redlock.nodes.map((_, i) => i),
): Promise<void> {
  const keys = redlock.keys(resources);
  const scriptKeys = [...keys.map((k) => k.lock), ...keys.map((k) => k.queue), ...keys.map((k) => k.leases)];
  const channels = keys.map((k) => k.channel);
  await Promise.all(
    indexes.map((i) => {
      const node = redlock.nodes[i] as RedisNode;
      return node
        .run(scripts.dequeue, scriptKeys, [token, ...channels, givingUp ? '1' : '0'], redlock.options.nodeTimeout)
        .catch((error: Error) => {
          redlock.reportNodeError(node, error, 'dequeue', resources);
        });
    }),
  );
}
