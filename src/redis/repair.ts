import type { RedisNode } from './adapters/index.js';
import { monotonicNow } from '../clock.js';
import { NodeError } from '../errors.js';
import { scripts } from './scripts/index.js';
import type { NodeHealth, NodeReport } from './node-health.js';

/**
 * Repair (anti-entropy): a node that lost its data regains its full part in the quorum without waiting
 * for each resource to be acquired again.
 *
 * Once its quarantine has ended, the node's counter is raised to at least the largest counter read from
 * a majority of nodes that kept their data (trusted), and the node is marked trusted again. Why that is
 * enough: every acquire that completed before the read wrote its fence back to a majority; that majority
 * and the one read share a node, which kept the fence (it is trusted: it lost nothing since). Acquires
 * running meanwhile write their fences back raise-only, as the repair does, so the order does not
 * matter, and several managers repairing one node at once only raise it more. With fewer than a
 * majority trusted, nothing is marked: the trust rule's "every node answered" case stays the way back.
 *
 * A standalone node is one counter: one read round and one write. A Cluster node has one per slot;
 * each slot is repaired when a round first meets it untrusted, a few at a time, so repairs never crowd
 * out lock traffic.
 */

/** What a repair needs from its manager. */
export interface RepairHost {
  readonly nodes: readonly RedisNode[];
  readonly quorum: number;
  readonly nodeTimeout: number;
  readonly keyPrefix: string;
  readonly health: NodeHealth;
  /** the marker on node j that covers what `scope` covers on a node (scope '' = the node's one marker) */
  markerOn(j: number, scope: string): string | undefined;
  repaired(node: number, countersRaised: number, ms: number): void;
  reportNodeError(node: RedisNode, error: Error, operation: string): void;
}

/** Repairs running at once (a Cluster may have many slots to repair). */
const CONCURRENT = 4;

/** After a repair found fewer than a majority of trusted nodes, the same node and epoch is not tried again for this long. */
const RETRY_AFTER_SHORTFALL_MS = 1_000;

interface Pending {
  readonly node: number;
  readonly scope: string;
  readonly epoch: string;
  timer?: ReturnType<typeof setTimeout>;
}

export class Repairs {
  private readonly pending = new Map<string, Pending>();
  /** repairs that found too few trusted nodes: not scheduled again for the same epoch before `until` (monotonic ms) */
  private readonly shortOf = new Map<string, { epoch: string; until: number }>();
  private readonly ready: Pending[] = [];
  private running = 0;
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly host: RepairHost) {}

  /** Nodes (or Cluster slots) known to have lost their data and not repaired yet, as far as this manager saw. */
  get untrusted(): number {
    return this.pending.size;
  }

  /** Whether a repair of node i's marker `scope` is scheduled or running. */
  isPending(node: number, scope: string): boolean {
    return this.pending.has(`${node}\u0000${scope}`);
  }

  /** Node i's marker `scope` reported epoch `epoch` untrusted while others were trusted: repair it `dueIn` ms from now. */
  schedule(node: number, scope: string, epoch: string, dueIn: number): void {
    if (this.closed) return;
    const key = `${node}\u0000${scope}`;
    const short = this.shortOf.get(key);
    if (short && short.epoch === epoch && monotonicNow() < short.until) return;
    const known = this.pending.get(key);
    if (known && known.epoch === epoch) return;
    if (known?.timer) clearTimeout(known.timer);
    const job: Pending = { node, scope, epoch };
    this.pending.set(key, job);
    job.timer = setTimeout(
      () => {
        job.timer = undefined;
        this.ready.push(job);
        this.drain();
      },
      Math.max(0, dueIn),
    );
    job.timer.unref?.();
  }

  /** Stop: no new repairs; resolves once those running have finished (each bounded by nodeTimeout). */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.pending.values()) if (job.timer) clearTimeout(job.timer);
    this.ready.length = 0;
    await Promise.all([...this.inFlight]);
  }

  private drain(): void {
    while (!this.closed && this.running < CONCURRENT && this.ready.length > 0) {
      const job = this.ready.shift() as Pending;
      this.running++;
      const work = this.repair(job)
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          this.inFlight.delete(work);
          this.drain();
        });
      this.inFlight.add(work);
    }
  }

  private forget(job: Pending): void {
    const key = `${job.node}\u0000${job.scope}`;
    if (this.pending.get(key) === job) this.pending.delete(key);
  }

  private async repair(job: Pending): Promise<void> {
    const { host } = this;
    const started = monotonicNow();
    const target = host.nodes[job.node] as RedisNode;
    const targetMarker = host.markerOn(job.node, job.scope) as string;
    const reads = await Promise.all(
      host.nodes.map((_, j) => (j === job.node ? this.read(job.node, targetMarker) : this.readFor(j, job.scope))),
    );
    const self = reads[job.node];
    if (!self || self.epoch !== job.epoch || self.trusted) return this.forget(job);
    const others = reads.filter((r, j): r is Read => j !== job.node && r !== undefined && r.trusted && r.complete);
    if (others.length < host.quorum) {
      // Fewer than a majority kept their data (or answered): nothing can be marked trusted. A later round
      // that meets the node untrusted schedules it again, after a pause (rounds do not spin on it).
      this.shortOf.set(`${job.node}\u0000${job.scope}`, { epoch: job.epoch, until: monotonicNow() + RETRY_AFTER_SHORTFALL_MS });
      if (this.shortOf.size > 16_384) this.shortOf.delete(this.shortOf.keys().next().value as string);
      return this.forget(job);
    }
    const fence = others.reduce((max, r) => (r.fence > max ? r.fence : max), 0n);
    const quarantine = host.health.repairAfter(reads);
    const reply = await target.run(scripts.repair, [targetMarker], [job.epoch, fence.toString(), String(quarantine)], host.nodeTimeout);
    const [ok, detail] = Array.isArray(reply) ? (reply as unknown[]) : [];
    if (Number(ok) === 1) {
      this.forget(job);
      host.repaired(job.node, 1, monotonicNow() - started);
    } else if (detail === 'young') {
      // Another manager's view of the quarantine is longer than ours was (a longer ttl recorded since): wait it out.
      this.pending.delete(`${job.node}\u0000${job.scope}`);
      this.schedule(job.node, job.scope, job.epoch, Math.max(1, quarantine - self.age));
    } else {
      this.forget(job);
    }
  }

  /** Node j's marker for `scope`, migrated first if it still has fencelock 0.1's per-resource counters. */
  private async readFor(j: number, scope: string): Promise<Read | undefined> {
    const marker = this.host.markerOn(j, scope);
    if (marker === undefined) return undefined;
    const read = await this.read(j, marker);
    if (!read || read.complete || !read.trusted || read.epoch === null) return read;
    return (await this.migrate(j, marker, read.epoch)) ? this.read(j, marker) : read;
  }

  private read(j: number, marker: string): Promise<Read | undefined> {
    const node = this.host.nodes[j] as RedisNode;
    return node
      .run(scripts.readNode, [marker], [], this.host.nodeTimeout)
      .then((reply) => parseRead(reply, node))
      .then(undefined, (error: Error) => {
        this.host.reportNodeError(node, error, 'repair');
        return undefined;
      });
  }

  /** Fold a standalone node's old per-resource counters into its own (migrate.lua), scan step by scan step. */
  private async migrate(j: number, marker: string, epoch: string): Promise<boolean> {
    const node = this.host.nodes[j] as RedisNode;
    if (node.isCluster) return false;
    const pattern = `${globEscape(this.host.keyPrefix)}{*}:fence`;
    let cursor = '0';
    // Bounded: each step covers up to 1,000 keys of the node's key space, and SCAN ends.
    for (let steps = 0; steps < 1_000_000; steps++) {
      const next = await node.run(scripts.migrate, [marker], [cursor, pattern, epoch], this.host.nodeTimeout).catch((error: Error) => {
        this.host.reportNodeError(node, error, 'repair');
        return null;
      });
      if (typeof next !== 'string') return false;
      if (next === '0') return true;
      cursor = next;
    }
    return false;
  }
}

/** One node's marker as read-node.lua returns it. */
interface Read extends NodeReport {
  readonly fence: bigint;
  /** the counter covers every resource (layout 2, or a 0.1 node whose counters were folded in) */
  readonly complete: boolean;
}

function parseRead(reply: unknown, node: RedisNode): Read {
  if (!Array.isArray(reply) || reply.length < 6) throw new NodeError(node.name, `unexpected read-node reply: ${JSON.stringify(reply)}`);
  const [epoch, trusted, fence, longest, age, layout] = reply as unknown[];
  const text = String(fence);
  if (!/^\d+$/.test(text))
    throw new NodeError(node.name, `fence counter is not a non-negative integer: ${JSON.stringify(text.slice(0, 40))}`);
  return {
    epoch: typeof epoch === 'string' ? epoch : null,
    trusted: Number(trusted) === 1,
    fence: BigInt(text),
    longest: Number(longest),
    age: Number(age),
    complete: String(layout) === '2',
  };
}

/** SCAN MATCH treats * ? [ ] \ as pattern characters: a prefix containing them must match only itself. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
