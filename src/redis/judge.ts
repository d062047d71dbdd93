// One round's replies judged, for the mutex and every primitive alike: which grants count toward the quorum
// (trust.ts), which nodes sit out a restart quarantine or wait for repair (node-health.ts, repair.ts), and
// what a round that won no quorum amounts to.
import { monotonicNow } from '../clock.js';
import { NodeError, type NodeFailure } from '../errors.js';
import type { RedisNode } from './adapters/index.js';
import type { Attempt, NodeSet, RoundReply } from './types.js';
import { shortfall, type GrantCount, type NodeAnswer } from './trust.js';

const UNTRUSTED =
  'its fence counter is not known to be complete (the node lost its data) and not repaired yet: ' +
  'its grant counts once it is repaired, or while every node answers';

/** Why a quarantined node's grant does not count, and when it will. */
function quarantined(left: number): string {
  const until = new Date(Date.now() + left).toISOString();
  return `lost its data: in restart quarantine, counts again in ${left} ms (at ${until}) (restartQuarantine)`;
}

/**
 * One round's replies as trust.ts counts them: records each node's epoch, applies the restart quarantine
 * (node-health.ts), schedules the repair of nodes that lost their data (repair.ts), and names in
 * `failures` every node whose answer cannot count (errors, quarantines). Shared by every primitive.
 */
export function judge(
  redlock: NodeSet,
  replies: ReadonlyArray<RoundReply>,
  scopes: readonly string[],
  resources: readonly string[],
  failures: NodeFailure[],
): NodeAnswer[] {
  const now = monotonicNow();
  const reports = replies.map((r) => (r.kind === 'error' ? undefined : r));
  const { left: quarantine, settle, lostAlone } = redlock.health.assess(reports, scopes, now);
  return replies.map((reply, i): NodeAnswer => {
    const node = redlock.nodes[i] as RedisNode;
    if (reply.kind === 'error') {
      failures.push({ node: node.name, error: reply.error });
      redlock.reportNodeError(node, reply.error, 'acquire', resources);
      return { kind: 'error', trusted: false, quarantine: 0, wait: 0, ahead: false };
    }
    // Lost its data while others kept theirs: repair it once its quarantine is over.
    const lost = lostAlone[i] === true && reply.epoch !== null;
    if (lost) redlock.repairs.schedule(i, scopes[i] ?? '', reply.epoch, quarantine[i] ?? 0);
    const left = reply.kind === 'granted' ? (quarantine[i] ?? 0) : 0;
    if (left > 0) failures.push({ node: node.name, error: new NodeError(node.name, quarantined(left)) });
    // Out of quarantine with its repair under way (two requests): if the round falls short, that is worth a short wait.
    const repair = lost && left === 0 && redlock.repairs.isPending(i, scopes[i] ?? '') ? 2 * redlock.options.nodeTimeout : 0;
    const held = reply.kind === 'held';
    return {
      kind: reply.kind,
      trusted: reply.trusted,
      quarantine: left,
      settle: left > 0 ? (settle[i] ?? 0) : 0,
      wait: held ? reply.wait : 0,
      ahead: held && reply.ahead,
      repair,
    };
  });
}

/** Names the granting nodes whose counters nobody can trust yet, for the QuorumError. */
export function nameUntrusted(redlock: NodeSet, count: GrantCount, failures: NodeFailure[]): void {
  for (const i of count.untrusted) {
    const name = (redlock.nodes[i] as RedisNode).name;
    failures.push({ node: name, error: new NodeError(name, UNTRUSTED) });
  }
}

/** A round that won no quorum, as an Attempt (see trust.ts shortfall). */
export function shortOf(redlock: NodeSet, answers: readonly NodeAnswer[], count: GrantCount, failures: NodeFailure[]): Attempt {
  const verdict = shortfall(answers, count, redlock.quorum);
  if (verdict.kind === 'no-quorum') return { kind: 'no-quorum', successes: count.counted.length, needed: redlock.quorum, failures };
  if (verdict.kind === 'quarantined') return { ...verdict, successes: count.counted.length, needed: redlock.quorum, failures };
  return verdict;
}
