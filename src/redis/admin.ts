// What an operator asks of the nodes outside the protocol: look at a resource (read-only), and delete its lock
// whoever holds it. Both ask every node in parallel, each bounded by nodeTimeout, and report each node's error.
import type { RedisNode } from './adapters/index.js';
import { monotonicNow } from '../clock.js';
import type { NodeFailure } from '../errors.js';
import type { ResourceKeys } from './keys.js';
import { scripts } from './scripts/index.js';
import type { NodeReport } from './node-health.js';
import { FIRST_CONNECT_MS, type Redlock } from './redlock.js';
import type { NodeDataState, NodeView } from '../backend.js';
import { arrayReply, parseInspectReply, type InspectReply } from './replies.js';

/** Per node: holder, remaining ms, waiters, fence counter and the node's state, or the node's error. Read-only. */
export async function inspect(redlock: Redlock, resource: string): Promise<NodeView[]> {
  const [k] = redlock.keys([resource]) as [ResourceKeys];
  const { nodeTimeout } = redlock.options;
  const read = (node: RedisNode, i: number): Promise<InspectReply | Error> =>
    node
      .run(scripts.inspect, [k.lock, redlock.markerFor(i, [k]), k.queue, k.fence], [], nodeTimeout, FIRST_CONNECT_MS)
      .then((reply) => parseInspectReply(arrayReply(reply, 9, node, 'inspect'), node))
      .then(undefined, (error: Error) => error);
  const replies = await Promise.all(redlock.nodes.map(read));
  const reports = replies.map((r) => (r instanceof Error || r.report.epoch === null ? undefined : r.report));
  const scopes = redlock.nodes.map((_, i) => redlock.scopeFor(i, [k]));
  const left = redlock.health.quarantineLeft(reports, scopes, monotonicNow());
  return replies.map((r, i): NodeView => {
    const node = (redlock.nodes[i] as RedisNode).name;
    if (r instanceof Error) return { node, owner: null, remaining: 0, waiters: 0, fence: null, state: null, quarantinedFor: 0, error: r };
    const quarantinedFor = left[i] as number;
    const state = stateOf(redlock, i, r.report, reports, scopes[i] as string, quarantinedFor);
    return { node, ...r.view, state, quarantinedFor, error: null };
  });
}

/** What inspect says of node i's data: see NodeDataState. */
function stateOf(
  redlock: Redlock,
  i: number,
  r: NodeReport,
  reports: ReadonlyArray<NodeReport | undefined>,
  scope: string,
  left: number,
): NodeDataState {
  if (r.epoch === null) return 'empty';
  if (left > 0) return 'quarantined';
  if (r.trusted) return 'trusted';
  if (!reports.some((x) => x?.trusted === true)) return 'new';
  return redlock.repairs.isPending(i, scope) ? 'repairing' : 'untrusted';
}

/** Delete the lock key on every node whoever holds it; resolves with how many nodes had it. */
export async function forceRelease(redlock: Redlock, resource: string): Promise<{ deleted: number; failures: NodeFailure[] }> {
  const [k] = redlock.keys([resource]) as [ResourceKeys];
  const failures: NodeFailure[] = [];
  const results = await Promise.all(
    redlock.nodes.map((node) =>
      node.run(scripts.forceRelease, [k.lock], [k.channel], redlock.options.nodeTimeout, FIRST_CONNECT_MS).then(
        (n) => Number(n),
        (error: Error) => {
          failures.push({ node: node.name, error });
          redlock.reportNodeError(node, error, 'forceRelease', [resource]);
          return 0;
        },
      ),
    ),
  );
  return { deleted: results.reduce((a, b) => a + b, 0), failures };
}
