import type { RedisNode } from '../adapters/index.js';

type Listener = (node: number) => void;

/**
 * Release notifications: a release publishes on the resource's channel on
 * every node, and waiters subscribed there retry at once instead of sleeping
 * out their backoff. Waiters of one resource share one subscription per node;
 * the last one to leave unsubscribes.
 */
export class ReleaseNotifications {
  private readonly channels = new Map<string, Set<Listener>>();

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly timeoutMs: number,
  ) {}

  /**
   * Calls `listener(nodeIndex)` for each release published on any of `channels`.
   * Resolves, with the function that stops it, once the subscriptions are in
   * place (or have failed or timed out: waiting then falls back to backoff alone).
   */
  async watch(channels: readonly string[], listener: Listener): Promise<() => void> {
    const pending: Array<Promise<void>> = [];
    for (const channel of channels) {
      let listeners = this.channels.get(channel);
      if (!listeners) {
        const set = new Set<Listener>();
        listeners = set;
        this.channels.set(channel, set);
        this.nodes.forEach((node, i) => {
          pending.push(node.subscribe(channel, () => set.forEach((l) => l(i)), this.timeoutMs).catch(() => undefined));
        });
      }
      listeners.add(listener);
    }
    await Promise.all(pending);
    return () => {
      for (const channel of channels) {
        const listeners = this.channels.get(channel);
        if (!listeners) continue;
        listeners.delete(listener);
        if (listeners.size === 0) {
          this.channels.delete(channel);
          for (const node of this.nodes) void node.unsubscribe(channel);
        }
      }
    };
  }

  clear(): void {
    this.channels.clear();
  }
}

/**
 * Collects notifications between attempts and wakes the waiter once enough
 * distinct nodes have reported a release: with N nodes and a holder on k of
 * them, one notification is not enough when k - 1 busy nodes would still
 * block the quorum.
 */
export class Wakeup {
  private notified = new Set<number>();
  private needed = 1;
  private only: number | undefined;
  private wake: (() => void) | undefined;

  notify(node: number): void {
    this.notified.add(node);
    if (this.ready()) this.wake?.();
  }

  private ready(): boolean {
    return this.only === undefined ? this.notified.size >= this.needed : this.notified.has(this.only);
  }

  /** Forget notifications seen so far; call right before an attempt starts. */
  reset(): void {
    this.notified = new Set();
  }

  /**
   * Resolves after `ms`, or earlier once `needed` nodes (or, given `only`,
   * that one node) reported a release; rejects when the signal aborts.
   */
  wait(ms: number, needed: number, signal: AbortSignal | undefined, only?: number): Promise<'notified' | 'timer'> {
    this.needed = Math.max(1, needed);
    this.only = only;
    if (this.ready()) return Promise.resolve('notified');
    return new Promise((resolve, reject) => {
      const done = (how: 'notified' | 'timer'): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(how);
      };
      const onAbort = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        reject(signal?.reason);
      };
      const timer = setTimeout(() => done('timer'), Math.max(0, ms));
      this.wake = () => done('notified');
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
