import { driftOf, type RestartQuarantine } from '../options.js';

/**
 * Restart quarantine: the Redlock spec's "delayed restart", done by the client.
 *
 * A node that lost its data (restart without persistence, FLUSHALL, failover to an empty replica) comes
 * back with a new marker (see _node-state.lua): a new epoch, `born` = when it came back, not trusted.
 * Until every lease granted with its help before the loss has ended, its "yes" must not count: the
 * holder of such a lease may still be working, and the node no longer knows of it.
 *
 * - 'auto': a node has lost its data when this manager saw it with another epoch before, or when it
 *   reports an untrusted marker while another answering node is trusted (so managers started after the
 *   restart notice too). It counts toward no acquire until it has been back `Q + drift(Q)` ms by its own
 *   clock, where Q is the longest ttl any client asked these nodes for (every request records its ttl on
 *   every node it reaches, and the maximum over the nodes that answer is taken) and never less than the
 *   longest this manager used. A new deployment (no node trusted yet) is usable at once.
 *   An untrusted marker beside a trusted one is also what a new deployment looks like while another
 *   manager's first acquire is marking its nodes trusted, one request per node: such a node is suspected,
 *   not known, to have lost its data, and a second look `settleMs` later (the bootstrap's requests have
 *   landed or timed out by then) tells which (`settle`). Its grant counts toward nothing meanwhile.
 * - N (ms), strict: a node whose marker is younger than N ms counts toward nothing, seen before or not.
 * - false: off.
 *
 * Only the node's own clock measures the time since it came back: no two clocks are compared.
 */

/** What one node said about itself in a reply (the marker part, see _node-state.lua). */
export interface NodeReport {
  /** null: the node has no marker (it lost its data and nobody has written one yet) */
  readonly epoch: string | null;
  /** ms since the marker was created, by the node's clock; -1 when not read */
  readonly age: number;
  readonly trusted: boolean;
  /** the longest ttl any request that reached this node asked for */
  readonly longest: number;
}

/** What this manager remembers of one marker. */
interface MarkerState {
  epoch: string | undefined;
  /** the epoch this manager saw replace another one (undefined: none seen) */
  replaced: string | undefined;
  /** monotonic ms when it saw that */
  replacedAt: number;
  /** the epoch a nodeQuarantined event was emitted for */
  announced: string | undefined;
  /** the epoch first seen untrusted beside a trusted node, with no epoch change seen (suspected lost) */
  suspected: string | undefined;
  /** monotonic ms when this manager first saw `suspected` so */
  suspectedAt: number;
}

/** Per node, what one round's replies say about its restart quarantine (NodeHealth.assess). */
export interface Assessment {
  /** ms for which its grant must still not count (0: it may count now) */
  readonly left: readonly number[];
  /**
   * ms until a second look may find a node that is only suspected of losing its data trusted after all
   * (another manager bootstrapping a new deployment): a round short of a quorum retries then rather than
   * wait `left` out (0: no such hope).
   */
  readonly settle: readonly number[];
  /**
   * untrusted beside a trusted node, with a marker: by what any client can tell, it lost its data while the others
   * kept theirs (judge.ts schedules its repair)
   */
  readonly lostAlone: readonly boolean[];
}

/**
 * Markers remembered per node. A standalone node has one marker (scope ''); a Cluster node has one per
 * hash slot (its marker key is the scope), at most 16,384.
 */
export class NodeHealth {
  private readonly markers: Array<Map<string, MarkerState>>;
  private longestUsed = 0;

  constructor(
    private readonly mode: RestartQuarantine,
    nodeCount: number,
    private readonly driftFactor: number,
    /** how long after this manager first saw a node suspected of loss it takes the suspicion as fact (2 × nodeTimeout) */
    private readonly settleMs: number,
    /** a node starts a quarantine this manager had not seen yet: `left` ms from now */
    private readonly onQuarantine: (node: number, left: number) => void,
  ) {
    this.markers = Array.from({ length: nodeCount }, () => new Map<string, MarkerState>());
  }

  /** This manager asks for a lease of `ttl` ms: the quarantine is never shorter than its longest. */
  used(ttl: number): void {
    if (ttl > this.longestUsed) this.longestUsed = ttl;
  }

  /** monotonic ms of the last epoch change this manager saw, and the quarantine it last computed */
  private lastReplacedAt = -Infinity;
  private lastQuarantine = 0;

  /**
   * Whether scripts must report a trusted node's age too (TIME costs a little on every call): in strict
   * mode, and for a while after an epoch change, when another manager may have marked the node trusted
   * (repair, bootstrap) while this one still counts its quarantine.
   */
  wantAge(now: number): boolean {
    if (typeof this.mode === 'number') return true;
    return this.mode === 'auto' && now - this.lastReplacedAt < 2 * this.lastQuarantine;
  }

  /** Record the epoch node `i` reported for marker `scope` (null: it has no marker, so it lost its data). */
  observe(i: number, epoch: string | null, now: number, scope = ''): void {
    const state = this.state(i, scope);
    if (epoch === null || (state.epoch !== undefined && state.epoch !== epoch)) {
      if (state.epoch !== undefined) {
        state.replaced = epoch ?? undefined;
        state.replacedAt = now;
        this.lastReplacedAt = now;
      }
    }
    if (epoch !== null) state.epoch = epoch;
  }

  /**
   * How long a node must have been back before its repair may mark it trusted: the quarantine of the mode
   * ('auto': Q + drift(Q); strict: N; off: no wait, as the counters are all a repair is about then).
   */
  repairAfter(reports: ReadonlyArray<NodeReport | undefined>): number {
    if (this.mode === false) return 0;
    return typeof this.mode === 'number' ? this.mode : this.quarantineMs(reports);
  }

  /** How long a lost node is kept out, given what the answering nodes recorded: Q + drift(Q). */
  quarantineMs(reports: ReadonlyArray<NodeReport | undefined>): number {
    let longest = this.longestUsed;
    for (const r of reports) if (r && r.longest > longest) longest = r.longest;
    this.lastQuarantine = longest + driftOf(longest, this.driftFactor);
    return this.lastQuarantine;
  }

  /**
   * For one round: per node, how many ms its grant must still not count, and how soon a node only suspected
   * of loss is worth a second look. Also records the epochs seen. `reports[i]` is undefined for a node that
   * did not answer. A suspected node's nodeQuarantined event waits for the second look.
   */
  assess(reports: ReadonlyArray<NodeReport | undefined>, scopes: readonly string[], now: number): Assessment {
    for (const [i, r] of reports.entries()) if (r) this.observe(i, r.epoch, now, scopes[i]);
    const left = this.quarantineLeft(reports, scopes, now);
    const anyTrusted = reports.some((r) => r?.trusted === true);
    const lostAlone = reports.map((r) => r !== undefined && untrustedBeside(r, anyTrusted) && r.epoch !== null);
    const settle = reports.map((r, i) => (r && lostAlone[i] && (left[i] as number) > 0 ? this.settling(i, scopes[i] ?? '', r, now) : 0));
    for (const [i, r] of reports.entries())
      if (r && (left[i] as number) > 0 && settle[i] === 0) this.announce(i, scopes[i] ?? '', r, left[i] as number);
    return { left, settle, lostAlone };
  }

  /**
   * For a round in which every node answered with a trusted marker: records the epochs (as assess does)
   * and tells whether none of them is in quarantine, so the round needs no closer look. A trusted node is
   * lost only if this manager saw its epoch change (strict mode: if it is young).
   */
  allClear(reports: ReadonlyArray<(NodeReport & { readonly epoch: string }) | undefined>, scopes: readonly string[], now: number): boolean {
    let clear = true;
    for (let i = 0; i < reports.length; i++) {
      const r = reports[i];
      // A node not heard from yet (redlock.ts firstClear): its reply is looked at when it comes (known).
      if (r === undefined) continue;
      const scope = scopes[i] as string;
      if (this.known(i, r.epoch, scope)) continue;
      this.observe(i, r.epoch, now, scope);
      clear = false;
    }
    if (typeof this.mode === 'number') return false;
    return clear;
  }

  /** Whether node i's `epoch` is the one this manager knows for `scope`, and not one it saw replace another (that one may be in quarantine). */
  known(i: number, epoch: string, scope: string): boolean {
    const state = this.markers[i]?.get(scope);
    return state?.epoch === epoch && state.replaced !== epoch;
  }

  /** Per node, ms left of its quarantine (0: none), from what the nodes reported; changes nothing. */
  quarantineLeft(reports: ReadonlyArray<NodeReport | undefined>, scopes: readonly string[], now: number): number[] {
    if (this.mode === false) return reports.map(() => 0);
    const strict = typeof this.mode === 'number' ? this.mode : undefined;
    const anyTrusted = reports.some((r) => r?.trusted === true);
    const q = this.quarantineMs(reports);
    return reports.map((r, i) => {
      if (!r) return 0;
      if (strict !== undefined) return r.age < 0 ? strict : Math.max(0, strict - r.age);
      return this.lost(i, scopes[i] ?? '', r, anyTrusted) ? this.left(i, scopes[i] ?? '', r, q, now) : 0;
    });
  }

  /**
   * Whether node i is known to have lost its data: its marker is untrusted while another answering node's
   * is trusted (any client can tell), or this manager saw its epoch change (even when every node lost its
   * data together, or a repair or bootstrap by another manager has marked it trusted since).
   */
  private lost(i: number, scope: string, r: NodeReport, anyTrusted: boolean): boolean {
    return untrustedBeside(r, anyTrusted) || this.sawReplaced(i, scope, r);
  }

  /** Whether this manager saw node i's epoch change to the one it reports now. */
  private sawReplaced(i: number, scope: string, r: NodeReport): boolean {
    const state = this.markers[i]?.get(scope);
    return state?.replaced !== undefined && state.replaced === r.epoch;
  }

  /** ms left of a lost node's quarantine: by its own clock when it reported its age, else from when we saw it change. */
  private left(i: number, scope: string, r: NodeReport, q: number, now: number): number {
    if (r.age >= 0) return Math.max(0, Math.ceil(q - r.age));
    const state = this.markers[i]?.get(scope);
    return state ? Math.max(0, Math.ceil(q - (now - state.replacedAt))) : q;
  }

  /**
   * ms until a second look at node i, lost alone (untrusted beside a trusted node), may clear it: this manager
   * saw no epoch change, and first saw it so less than settleMs ago. Strict mode judges by age alone.
   */
  private settling(i: number, scope: string, r: NodeReport, now: number): number {
    if (typeof this.mode === 'number' || r.epoch === null || this.sawReplaced(i, scope, r)) return 0;
    const state = this.state(i, scope);
    if (state.suspected !== r.epoch) {
      state.suspected = r.epoch;
      state.suspectedAt = now;
    }
    return Math.max(0, Math.ceil(state.suspectedAt + this.settleMs - now));
  }

  private announce(i: number, scope: string, r: NodeReport, left: number): void {
    const state = this.state(i, scope);
    if (r.epoch === null || state.announced === r.epoch) return;
    state.announced = r.epoch;
    this.onQuarantine(i, left);
  }

  private state(i: number, scope: string): MarkerState {
    const markers = this.markers[i] as Map<string, MarkerState>;
    let state = markers.get(scope);
    if (!state) {
      state = {
        epoch: undefined,
        replaced: undefined,
        replacedAt: -Infinity,
        announced: undefined,
        suspected: undefined,
        suspectedAt: -Infinity,
      };
      markers.set(scope, state);
    }
    return state;
  }
}

/** The rule any client can apply: a node untrusted while another answering node is trusted lost its data. */
function untrustedBeside(r: NodeReport, anyTrusted: boolean): boolean {
  return !r.trusted && anyTrusted;
}
