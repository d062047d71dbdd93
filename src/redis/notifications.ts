import type { RedisNode } from './adapters/index.js';
import { onAbort } from './abort-listeners.js';

/** Called with the index of the node a notification came from, and its payload. */
type Listener = (node: number, message: string) => void;

interface Channel {
  readonly listeners: Set<Listener>;
  /** true once the subscription was answered on every node (or failed, or timed out) */
  settled: boolean;
  readonly subscribed: Promise<void>;
}

export interface Watch {
  /** resolves once every channel's subscription is in place (or has failed: waiting then relies on its timer) */
  readonly ready: Promise<void>;
  /** true when all channels were already subscribed before this watch: nothing published since can be missed */
  readonly wasReady: boolean;
  stop(): void;
}

/**
 * Release notifications: a release publishes on the resource's channel on
 * every node, and waiters subscribed there retry at once instead of sleeping
 * out their backoff. Waiters of one resource share one subscription per node;
 * the last one to leave unsubscribes.
 */
export class ReleaseNotifications {
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly timeoutMs: number,
  ) {}

  /** Calls `listener(nodeIndex, message)` for each message published on any of `channels`. */
  watch(channels: readonly string[], listener: Listener): Watch {
    let wasReady = true;
    const pending: Array<Promise<void>> = [];
    for (const name of channels) {
      let channel = this.channels.get(name);
      if (!channel) {
        const listeners = new Set<Listener>();
        const subscribed = Promise.all(
          this.nodes.map((node, i) =>
            node.subscribe(name, (message) => listeners.forEach((l) => l(i, message)), this.timeoutMs).catch(() => undefined),
          ),
        ).then(() => {
          created.settled = true;
        });
        const created: Channel = { listeners, settled: false, subscribed };
        channel = created;
        this.channels.set(name, channel);
      }
      if (!channel.settled) {
        wasReady = false;
        pending.push(channel.subscribed);
      }
      channel.listeners.add(listener);
    }
    return {
      ready: Promise.all(pending).then(() => undefined),
      wasReady,
      stop: () => {
        for (const name of channels) {
          const channel = this.channels.get(name);
          if (!channel) continue;
          channel.listeners.delete(listener);
          if (channel.listeners.size === 0) this.unsubscribeSoon(name, channel);
        }
      },
    };
  }

  /**
   * The last listener left: unsubscribe once this turn's work is done (setImmediate). A waiter stops listening
   * in the moment it gets the lock, and its caller should not wait for an UNSUBSCRIBE written to every node
   * first; a waiter that comes back meanwhile (the next acquire of the same resource) finds the subscription
   * still in place. The channel stays in the map until then, so that a new watch never subscribes ahead of the
   * old subscription's pending UNSUBSCRIBE.
   */
  private unsubscribeSoon(name: string, channel: Channel): void {
    setImmediate(() => {
      if (channel.listeners.size > 0 || this.channels.get(name) !== channel) return;
      this.channels.delete(name);
      for (const node of this.nodes) void node.unsubscribe(name);
    });
  }

  /**
   * True while any channel is subscribed: a waiter of this manager listens, or the last one left this turn (so the
   * uncontended path can skip building channel names).
   */
  get watching(): boolean {
    return this.channels.size > 0;
  }

  /** True when every channel is subscribed already, so a watch would start listening at once. */
  isReady(channels: readonly string[]): boolean {
    return channels.every((name) => this.channels.get(name)?.settled === true);
  }

  clear(): void {
    this.channels.clear();
  }
}

/** The payload of a release that names no waiter: everyone may try (a forced release, or nobody queued). */
export const ANYONE = '*';

/**
 * Collects notifications between attempts and wakes the waiter once enough
 * distinct nodes have said it may go: with N nodes and a holder on k of
 * them, one notification is not enough when k - 1 busy nodes would still
 * block the quorum. A notification naming another waiter is not for us:
 * it is that waiter's turn.
 */
export class Wakeup {
  private notified = new Set<number>();
  private needed = 1;
  private only: number | undefined;
  private wake: (() => void) | undefined;
  /** nodes whose release named this waiter (handed it the key) since the last reset; undefined: not counted */
  private readonly named: Set<number> | undefined;

  /**
   * `token`: this waiter's owner token, or undefined for a waiter outside the queue (any release wakes it).
   * `countNamed`: also count the nodes whose release named it (namedBy), for the chaos generator's planted
   * flaw only (planted-flaws.ts): off, a notification costs nothing more.
   */
  constructor(
    private readonly token: string | undefined,
    countNamed = false,
  ) {
    this.named = countNamed ? new Set() : undefined;
  }

  /** per node, the grant its release handed this waiter, as acquire.lua's reply (handed-grant.ts); undefined until one came */
  private grants: Array<string | undefined> | undefined;

  notify(node: number, message: string): void {
    if (this.token !== undefined && message !== this.token && message !== ANYONE) {
      // '<token> <grant>': a release handed us the lock and says what it granted (_handover.lua).
      if (message.length <= this.token.length || message.charCodeAt(this.token.length) !== 32 || !message.startsWith(this.token)) return;
      (this.grants ??= [])[node] = message.slice(this.token.length + 1);
      this.named?.add(node);
    } else if (this.named && message === this.token) this.named.add(node);
    this.notified.add(node);
    if (this.ready()) this.wake?.();
  }

  /** woken by a release in this process (LocalWaiters), not by the nodes: see `takeShortcut` */
  private shortcut = false;

  /** A lock this process held was just released: try at once, as if every node had said so. False if not waiting now. */
  wakeForHandoff(nodeCount: number): boolean {
    if (!this.wake) return false;
    for (let i = 0; i < nodeCount; i++) this.notified.add(i);
    this.shortcut = true;
    this.wake();
    return true;
  }

  /** Whether the last wake-up was LocalWaiters' shortcut (and forget it). */
  takeShortcut(): boolean {
    const taken = this.shortcut;
    this.shortcut = false;
    return taken;
  }

  private ready(): boolean {
    return this.only === undefined ? this.notified.size >= this.needed : this.notified.has(this.only);
  }

  /** Forget notifications seen so far; call right before an attempt starts. */
  reset(): void {
    this.notified = new Set();
    this.named?.clear();
  }

  /** The grants releases handed this waiter, per node (see notify), and forget them; undefined: none came. */
  takeGrants(): Array<string | undefined> | undefined {
    const grants = this.grants;
    this.grants = undefined;
    return grants;
  }

  /** How many nodes handed this waiter the key since the last reset (their release named it); 0 when not counted. */
  namedBy(): number {
    return this.named?.size ?? 0;
  }

  /**
   * Resolves after `ms`, or earlier once `needed` nodes (or, given `only`,
   * that one node) said we may go; rejects when the signal aborts.
   */
  wait(ms: number, needed: number, signal: AbortSignal | undefined, only?: number): Promise<'notified' | 'timer'> {
    this.needed = Math.max(1, needed);
    this.only = only;
    if (this.ready()) return Promise.resolve('notified');
    return new Promise((resolve, reject) => {
      let stopListening: (() => void) | undefined;
      const done = (how: 'notified' | 'timer'): void => {
        clearTimeout(timer);
        stopListening?.();
        this.wake = undefined;
        resolve(how);
      };
      const aborted = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        reject(signal?.reason);
      };
      const timer = setTimeout(() => done('timer'), Math.max(0, ms));
      this.wake = () => done('notified');
      if (signal?.aborted) return aborted();
      // Shared per signal (abort-listeners.ts): every waiter listens on the manager's closing signal, and an
      // EventTarget listener of its own costs a walk of the signal's listeners to add and again to remove.
      if (signal) stopListening = onAbort(signal, aborted);
    });
  }
}

/**
 * The handoff shortcut within one process. When this process releases a lock, the next holder is often a
 * waiter of this same process. Woken at once, that waiter's next attempt leaves right behind the release on
 * the same connections, so each node runs the release first and then grants the waiter: the lock changes
 * hands in one round trip, instead of a notification there and back plus the waiter's round trip.
 *
 * The waiter chosen is this process's earliest (lowest ticket). Whether it really is first in line, a
 * waiter of another process may be ahead, the acquire script decides as for every attempt: a wrong guess
 * costs one attempt that finds the lock taken, nothing more. A resource on which the guess keeps missing
 * (its waiters are mostly elsewhere) gets the shortcut only now and then, to notice when that changes.
 * Only fair waits for a single resource take part.
 */
export class LocalWaiters {
  private readonly byResource = new Map<string, { readonly waiters: Map<Wakeup, string>; hits: number; skipped: number }>();

  add(resource: string, wakeup: Wakeup, ticket: string): void {
    let entry = this.byResource.get(resource);
    if (!entry) {
      entry = { waiters: new Map(), hits: 1, skipped: 0 };
      this.byResource.set(resource, entry);
    }
    entry.waiters.set(wakeup, ticket);
  }

  remove(resource: string, wakeup: Wakeup): void {
    const entry = this.byResource.get(resource);
    if (!entry) return;
    entry.waiters.delete(wakeup);
    if (entry.waiters.size === 0) this.byResource.delete(resource);
  }

  /** This process released its lock on `resource` (the release already on its way): wake the earliest local waiter. */
  released(resource: string, nodeCount: number): void {
    const entry = this.byResource.get(resource);
    if (!entry) return;
    // A guess that missed recently is tried again only every 16th release.
    if (entry.hits < 0.25 && ++entry.skipped < 16) return;
    entry.skipped = 0;
    let first: Wakeup | undefined;
    let firstTicket = '';
    for (const [wakeup, ticket] of entry.waiters) {
      if (first === undefined || Number(ticket) < Number(firstTicket)) {
        first = wakeup;
        firstTicket = ticket;
      }
    }
    first?.wakeForHandoff(nodeCount);
  }

  /** How an attempt woken by the shortcut went: a moving score of how often the guess is right. */
  outcome(resource: string, acquired: boolean): void {
    const entry = this.byResource.get(resource);
    if (entry) entry.hits = entry.hits / 2 + (acquired ? 0.5 : 0);
  }
}
