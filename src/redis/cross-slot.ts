import type { NodeFailure } from '../errors.js';
import { clusterKeySlot } from './keys.js';
import { dequeue, raiseFence } from './lease.js';
import type { Attempt, Grant, LeaseOps, QueueOptions, Redlock } from './redlock.js';

/**
 * Multi-resource locks on Redis Cluster nodes. On a Cluster node one script
 * may only touch keys of one hash slot, and each resource's keys sit in the
 * slot of its own name. So when a lock's resources fall into several slots,
 * the lock is taken group by group: each group (the resources of one slot) is
 * an ordinary multi-resource lock over all nodes, with one owner token for
 * the whole lock, taken in a fixed order.
 *
 * - All or nothing: when a group fails, the groups already taken are released
 *   before the attempt reports its failure.
 * - One fence: the largest of the groups' fences, written back to the other
 *   groups' counters on a quorum of their nodes before the acquire resolves,
 *   so it exceeds every earlier fence of each resource, as for a lock in one slot.
 * - Validity: the shortest of the groups'. Extension and release act on every group.
 *
 * Locks whose resources share a slot, and managers without Cluster nodes, take the one-script path.
 */

/** The resources grouped by Cluster slot, groups in the order of their first resource; one group when no node is a Cluster. */
export function slotGroups(redlock: Redlock, resources: readonly string[]): ReadonlyArray<readonly string[]> {
  if (resources.length < 2 || !redlock.nodes.some((n) => n.isCluster)) return [resources];
  const groups = new Map<number, string[]>();
  for (const [i, k] of redlock.keys(resources).entries()) {
    const slot = clusterKeySlot(k.lock);
    const group = groups.get(slot);
    if (group) group.push(resources[i] as string);
    else groups.set(slot, [resources[i] as string]);
  }
  return [...groups.values()];
}

/** One acquire round for `resources`, across slots when it must be (one resource, or no Cluster node: one round). */
export function acquireRound(
  redlock: Redlock,
  resources: readonly string[],
  token: string,
  ttl: number,
  queue: QueueOptions,
  leaderFirst: boolean,
): Promise<Attempt> {
  if (resources.length < 2 || !redlock.anyCluster) return redlock.acquireOnce(resources, token, ttl, queue, leaderFirst);
  const groups = slotGroups(redlock, resources);
  if (groups.length === 1) return redlock.acquireOnce(resources, token, ttl, queue, leaderFirst);
  return acquireGroups(redlock, groups, resources, token, ttl, queue, leaderFirst);
}

/** The round of a lock whose resources fall into several Cluster slots: group by group, all or nothing, one fence. */
async function acquireGroups(
  redlock: Redlock,
  groups: ReadonlyArray<readonly string[]>,
  resources: readonly string[],
  token: string,
  ttl: number,
  queue: QueueOptions,
  leaderFirst: boolean,
): Promise<Attempt> {
  const parts: Grant[] = [];
  const giveUp = async (attempt: Attempt): Promise<Attempt> => {
    await Promise.all(parts.map((p) => redlock.release(p)));
    return attempt;
  };
  for (const group of groups) {
    const attempt = await redlock.acquireOnce(group, token, ttl, queue, leaderFirst);
    if (attempt.kind !== 'acquired') return giveUp(attempt);
    parts.push(attempt.grant);
  }
  const fence = parts.reduce((max, p) => (p.fence > max ? p.fence : max), 0n);
  const raised = await Promise.all(parts.map((p) => (p.fence < fence ? raiseFence(redlock, p, fence) : { ok: true, failures: [] })));
  const failed = raised.find((r) => !r.ok);
  if (failed) return giveUp({ kind: 'no-quorum', successes: 0, needed: redlock.quorum, failures: failed.failures });
  const validUntil = Math.min(...parts.map((p) => p.validUntil));
  const first = parts[0] as Grant;
  return {
    kind: 'acquired',
    grant: { resources, token, fence, ttl, validUntil, epochs: first.epochs, ops: new SlotGroupOps(redlock, parts) },
  };
}

/** A waiter gives up: leave the wait queues of every group (see lease.ts dequeue). */
export async function dequeueAll(redlock: Redlock, resources: readonly string[], token: string): Promise<void> {
  await Promise.all(slotGroups(redlock, resources).map((group) => dequeue(redlock, group, token, true)));
}

/** Extension and release of a lock held group by group: each group in parallel, the lock as strong as its weakest group. */
class SlotGroupOps implements LeaseOps {
  constructor(
    private readonly redlock: Redlock,
    private parts: Grant[],
  ) {}

  async extend(grant: Grant, ttl: number): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
    const outcomes = await Promise.all(this.parts.map((p) => this.redlock.extend(p, ttl)));
    const extendedParts = outcomes.flatMap((o) => ('grant' in o ? [o.grant] : []));
    if (extendedParts.length === outcomes.length) {
      this.parts = extendedParts;
      return { grant: { ...grant, ttl, validUntil: Math.min(...extendedParts.map((p) => p.validUntil)) } };
    }
    // The weakest failed group decides: a group that was refused loses the lock, one that only met errors may be retried.
    const failed = outcomes.flatMap((o) => ('grant' in o ? [] : [o]));
    return failed.reduce((worst, o) => (o.extended + o.failures.length < worst.extended + worst.failures.length ? o : worst));
  }

  async release(): Promise<{ released: number; nodes: number }> {
    const results = await Promise.all(this.parts.map((p) => this.redlock.release(p)));
    return { released: Math.min(...results.map((r) => r.released)), nodes: this.redlock.nodes.length };
  }
}
