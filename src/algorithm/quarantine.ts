import type { RestartQuarantine } from '../options.js';

/**
 * Restart quarantine: the Redlock spec's "delayed restart", done by the client.
 *
 * Each node keeps a marker with a random epoch and the time it was created
 * (see acquire.lua). A node that restarts without persistence comes back
 * without the marker, so the next script gives it a new epoch: that is how
 * data loss is seen. Such a node must not help anyone take a lock that an
 * earlier holder may still believe it holds there, so for a while its "yes"
 * does not count toward a quorum.
 *
 * - 'observed': a node this manager saw before with another epoch counts
 *   toward no acquire of ttl T until T ms after the change was seen.
 * - N (ms): a node whose marker is younger than N counts toward nothing,
 *   seen before or not (covers clients started after the restart).
 * - false: off.
 */
export class Quarantine {
  private readonly epochs: Array<string | undefined>;
  private readonly lossSeenAt: number[];

  constructor(
    private readonly mode: RestartQuarantine,
    nodeCount: number,
  ) {
    this.epochs = new Array<string | undefined>(nodeCount).fill(undefined);
    this.lossSeenAt = new Array<number>(nodeCount).fill(-Infinity);
  }

  /** Record the epoch a node reported (null: its marker is gone, so it lost its data). */
  observe(node: number, epoch: string | null, now: number): void {
    const known = this.epochs[node];
    if (epoch === null) {
      if (known !== undefined) this.lossSeenAt[node] = now;
      return;
    }
    if (known !== undefined && known !== epoch) this.lossSeenAt[node] = now;
    this.epochs[node] = epoch;
  }

  /** Why this node's grant must not count toward an acquire of `ttl`, or undefined when it may. */
  excludes(node: number, ttl: number, markerAgeMs: number, now: number): string | undefined {
    if (this.mode === false) return undefined;
    if (this.mode === 'observed') {
      const since = now - (this.lossSeenAt[node] as number);
      return since < ttl ? `lost its data ${Math.round(since)} ms ago; quarantined for ${ttl} ms (restartQuarantine)` : undefined;
    }
    return markerAgeMs < this.mode
      ? `its data is only ${markerAgeMs} ms old; quarantined until ${this.mode} ms (restartQuarantine)`
      : undefined;
  }
}
