/**
 * Which grants count toward a quorum, given what each node said about the
 * trustworthiness of its fence counter, and what a round that failed means.
 *
 * A node that lost its data (restart without persistence, FLUSHALL, failover
 * to an empty replica) comes back with a fresh marker and a counter that starts
 * over. If such a node could help form a quorum, the fence could go backwards:
 * the node that carried the last fence into the overlap of two quorums may be
 * exactly the one that forgot it. So a node's grant counts only while its
 * counter is trustworthy: the node never lost data since the deployment's
 * first acquire marked it, or it was repaired since (repair.ts).
 *
 * Two escapes keep locks available:
 * - bootstrap: at least a quorum answered and none of them was ever trusted:
 *   a new deployment (or every node lost its data, where no guarantee is left
 *   to keep). All grants count, and the nodes are marked trusted.
 * - all answered: every node answered and no trustworthy node holds the lock,
 *   so the fence, the maximum over all grants, covers everything any node
 *   still knows. All grants count. Trusted nodes are then fewer than a
 *   majority (else they alone would have made the quorum): no majority kept
 *   its data, so no repair can ever read one (repair.ts), and nothing better
 *   than the maximum over every node exists. So this is a new beginning, as
 *   for a new deployment: the nodes are marked trusted.
 *
 * Every granting node whose counter is behind is raised before the acquire resolves.
 * A grant in restart quarantine (node-health.ts) counts toward nothing, by either rule.
 */
export interface NodeAnswer {
  readonly kind: 'granted' | 'held' | 'error';
  readonly trusted: boolean;
  /** granted: ms for which a restart quarantine keeps this grant from counting (0: none) */
  readonly quarantine: number;
  /** held: ms until what blocks us there ends (Infinity: unknown) */
  readonly wait: number;
  /** held: the node is free but another waiter is ahead of us in its queue */
  readonly ahead: boolean;
  /** in quarantine on suspicion only (node-health.ts settle): ms until a second look may clear it (0: none) */
  readonly settle?: number;
  /** granted but untrusted, out of quarantine, and a repair of it is under way: ms until it may count (0: none) */
  readonly repair?: number;
}

export interface GrantCount {
  /** node indexes whose grants count toward the quorum */
  readonly counted: readonly number[];
  /** granted nodes out of quarantine whose grants do not count only because their counters are not trustworthy */
  readonly untrusted: readonly number[];
  /** a new deployment (or no majority kept its data): mark every answering node out of quarantine trusted */
  readonly bootstrap: boolean;
}

export function countGrants(answers: readonly NodeAnswer[], quorum: number): GrantCount {
  const indexes = answers.map((_, i) => i);
  const usable = indexes.filter((i) => answers[i]!.kind === 'granted' && answers[i]!.quarantine === 0);
  const trusted = usable.filter((i) => answers[i]!.trusted);
  const untrusted = usable.filter((i) => !answers[i]!.trusted);
  if (trusted.length >= quorum) return { counted: trusted, untrusted, bootstrap: false };

  const answered = answers.filter((a) => a.kind !== 'error');
  if (answered.length >= quorum && !answered.some((a) => a.trusted)) return { counted: usable, untrusted: [], bootstrap: true };
  const allAnswered = answered.length === answers.length;
  if (allAnswered && !answered.some((a) => a.kind === 'held' && a.trusted)) return { counted: usable, untrusted: [], bootstrap: true };
  return { counted: trusted, untrusted, bootstrap: false };
}

/** Why a round without a counted quorum failed, and when trying again can help. */
export type Shortfall =
  /**
   * Another owner holds it (or waiters are ahead of us) on enough nodes. `retryAfter` ms from now enough
   * of them (and of the quarantined nodes) are free for a quorum; `busyNodes` releases must come first.
   */
  | { readonly kind: 'busy'; readonly retryAfter: number; readonly busyNodes: number; readonly behind: boolean }
  /** Nobody holds it, but nodes that lost their data count again only `retryAfter` ms from now (quarantine, repair). */
  | { readonly kind: 'quarantined'; readonly retryAfter: number }
  /** Node errors (or counters nobody can trust yet) leave too few nodes for a quorum, whatever the wait. */
  | { readonly kind: 'no-quorum' };

/**
 * The verdict on a round whose counted grants fell short. A lock held by another owner is busy, never a
 * quorum failure, even while some nodes are quarantined or untrusted; a quorum failure is for rounds that
 * node errors (or untrusted counters) make impossible to win by waiting.
 */
export function shortfall(answers: readonly NodeAnswer[], count: GrantCount, quorum: number): Shortfall {
  const counted = new Set(count.counted);
  // What may free up with time: holders' leases and waiters' turns, and quarantines.
  const pending: number[] = [];
  let held = 0;
  let ahead = 0;
  for (const [i, a] of answers.entries()) {
    if (a.kind === 'held') {
      held++;
      if (a.ahead) ahead++;
      pending.push(a.wait);
    } else if (a.kind === 'granted' && !counted.has(i) && (a.quarantine > 0 || (a.repair ?? 0) > 0)) {
      pending.push(a.quarantine > 0 ? a.settle || a.quarantine : (a.repair as number));
    }
    // Errors, and untrusted grants out of quarantine with no repair under way, are not pending: no wait helps.
  }
  const needed = quorum - counted.size;
  if (needed > pending.length) return { kind: 'no-quorum' };
  const retryAfter = pending.sort((a, b) => a - b)[needed - 1] as number;
  if (held > 0) {
    const behind = ahead > answers.length - quorum;
    return { kind: 'busy', retryAfter, busyNodes: Math.min(needed, held), behind };
  }
  return { kind: 'quarantined', retryAfter };
}
