/**
 * Which grants count toward a quorum, given what each node said about the
 * trustworthiness of its fence counters.
 *
 * A node that lost its data (restart without persistence, FLUSHALL, failover
 * to an empty replica) comes back with a fresh marker and counters that start
 * over. If such a node could help form a quorum, the fence could go backwards:
 * the node that carried the last fence into the overlap of two quorums may be
 * exactly the one that forgot it. So a node's grant counts only while its
 * counter for the resource is trustworthy:
 *
 * - the node is trusted (it never lost data since the deployment's first
 *   acquire marked it), or the resource's counter was repaired on it (raised
 *   to a fence issued by a trustworthy quorum, after its data loss).
 *
 * Two escapes keep locks available:
 * - bootstrap: at least a quorum answered and none of them was ever trusted:
 *   a new deployment (or every node lost its data, where no guarantee is left
 *   to keep). All grants count, and the nodes are marked trusted.
 * - all answered: every node answered and no trustworthy node holds the lock,
 *   so the fence, the maximum over all grants, covers everything any node
 *   still knows. All grants count.
 *
 * Every granting node whose counter is behind or untrusted is repaired before
 * the acquire resolves.
 */
export interface NodeAnswer {
  readonly kind: 'granted' | 'held' | 'error';
  readonly nodeTrusted: boolean;
  readonly resourcesTrusted: boolean;
  /** granted, but a restart quarantine keeps this grant from counting */
  readonly quarantined: boolean;
}

export interface GrantCount {
  /** node indexes whose grants count toward the quorum */
  readonly counted: readonly number[];
  /** granted nodes whose grants do not count only because their counters are not trustworthy */
  readonly untrusted: readonly number[];
  /** a new deployment: mark every granting node trusted */
  readonly bootstrap: boolean;
}

export const trustworthy = (a: NodeAnswer): boolean => a.nodeTrusted || a.resourcesTrusted;

export function countGrants(answers: readonly NodeAnswer[], quorum: number): GrantCount {
  const indexes = answers.map((_, i) => i);
  const usable = indexes.filter((i) => answers[i]!.kind === 'granted' && !answers[i]!.quarantined);
  const trusted = usable.filter((i) => trustworthy(answers[i]!));
  const untrusted = usable.filter((i) => !trustworthy(answers[i]!));
  if (trusted.length >= quorum) return { counted: trusted, untrusted, bootstrap: false };

  const answered = answers.filter((a) => a.kind !== 'error');
  if (answered.length >= quorum && !answered.some(trustworthy)) return { counted: usable, untrusted: [], bootstrap: true };
  const allAnswered = answered.length === answers.length;
  if (allAnswered && !answered.some((a) => a.kind === 'held' && trustworthy(a)))
    return { counted: usable, untrusted: [], bootstrap: false };
  return { counted: trusted, untrusted, bootstrap: false };
}
