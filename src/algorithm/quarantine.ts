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
/** What this manager knows of one marker: the epoch it last saw, and when it saw it change. */
interface MarkerState {
  epoch: string | undefined;
  lossSeenAt: number;
}

/**
 * Markers remembered per node. A standalone node has one marker (scope ''); a Cluster node has one per
 * resource (`<prefix>{r}:epoch`, see keys.ts), so its scopes are bounded: past this many, the oldest is
 * forgotten, and a loss of that one goes unseen, as it would by a manager started afresh.
 */
const MAX_SCOPES = 10_000;

export class Quarantine {
  private readonly markers: Array<Map<string, MarkerState>>;

  constructor(
    private readonly mode: RestartQuarantine,
    nodeCount: number,
  ) {
    this.markers = Array.from({ length: nodeCount }, () => new Map<string, MarkerState>());
  }

  private state(node: number, scope: string): MarkerState {
    const markers = this.markers[node] as Map<string, MarkerState>;
    let state = markers.get(scope);
    if (!state) {
      if (markers.size >= MAX_SCOPES) markers.delete(markers.keys().next().value as string);
      state = { epoch: undefined, lossSeenAt: -Infinity };
      markers.set(scope, state);
    }
    return state;
  }

  /**
   * Record the epoch a node reported for marker `scope` ('' for a node's one marker; the marker key on a
   * Cluster node). null: the marker is gone, so the node lost its data.
   */
  observe(node: number, epoch: string | null, now: number, scope = ''): void {
    const state = this.state(node, scope);
    if (epoch === null) {
      if (state.epoch !== undefined) state.lossSeenAt = now;
      return;
    }
    if (state.epoch !== undefined && state.epoch !== epoch) state.lossSeenAt = now;
    state.epoch = epoch;
  }

  /** Why this node's grant must not count toward an acquire of `ttl`, or undefined when it may. */
  excludes(node: number, ttl: number, markerAgeMs: number, now: number, scope = ''): string | undefined {
    if (this.mode === false) return undefined;
    if (this.mode === 'observed') {
      const since = now - (this.markers[node]?.get(scope)?.lossSeenAt ?? -Infinity);
      return since < ttl ? `lost its data ${Math.round(since)} ms ago; quarantined for ${ttl} ms (restartQuarantine)` : undefined;
    }
    return markerAgeMs < this.mode
      ? `its data is only ${markerAgeMs} ms old; quarantined until ${this.mode} ms (restartQuarantine)`
      : undefined;
  }
}
