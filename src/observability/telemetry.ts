// What the LockManager calls to feed metrics and diagnostics channels. It sees
// the same facts as the manager's events: lock events pass through `event()`;
// only what the events cannot tell (the outcome and duration of a failed
// acquire, when a held lock ends, failed extension rounds) has its own hook.
import { monotonicNow } from '../clock.js';
import type { LockEventName, LockEvents } from '../events.js';
import type { Lock } from '../lock.js';
import { lockEventSubscribed, publishLockEvent, traceAcquire, tracing } from './diagnostics.js';
import { meterProviderOption } from './meter-provider.js';
import { LockMetrics, type AcquireMethod, type AcquireOutcome, type ExtensionFailure } from './metrics.js';
import { acquireFailure } from './outcome.js';

/** What an acquire is asked for, as far as observability reports it. */
export interface AcquireRequest {
  readonly ttl: number;
  readonly timeout: number;
  readonly signal: AbortSignal | undefined;
}

export class Telemetry {
  readonly #metrics: LockMetrics;
  readonly #heldSince = new WeakMap<Lock, number>();
  /** locks in #heldSince: none while no meter records, so ending a lock then costs no lookup */
  #timed = 0;

  /** `options` are the manager's raw options: only `meterProvider` is read (and checked) here. */
  constructor(options: unknown) {
    this.#metrics = new LockMetrics(meterProviderOption(options));
  }

  /**
   * Nothing would see an acquire's timing or trace (no real meter, no tracing subscriber): the manager then
   * runs it bare, without `acquire()`'s wrapper, clock reads and closures.
   */
  get quiet(): boolean {
    return !this.#metrics.live && !tracing();
  }

  /** Someone would see event `event` through metrics or a diagnostics channel. */
  observes(event: LockEventName): boolean {
    switch (event) {
      case 'released':
      case 'extended':
      case 'lost':
        return lockEventSubscribed(event);
      case 'retry':
      case 'nodeError':
        return this.#metrics.live;
      default:
        return false;
    }
  }

  /** Times and traces one acquire call; `run` resolves null only for a tryAcquire that found the lock busy. */
  acquire<T extends Lock | null>(
    method: AcquireMethod,
    resources: readonly string[],
    request: AcquireRequest,
    run: () => Promise<T>,
  ): Promise<T> {
    this.#metrics.acquireStarted();
    const started = monotonicNow();
    return traceAcquire(
      () => ({ method, resources, ttl: request.ttl, timeout: request.timeout }),
      async (context) => {
        let outcome: AcquireOutcome = 'error';
        try {
          const result = await run();
          outcome = result === null ? 'busy' : 'acquired';
          return result;
        } catch (error) {
          outcome = acquireFailure(error, request.signal);
          throw error;
        } finally {
          if (context) context.outcome = outcome;
          this.#metrics.acquireEnded(method, outcome, (monotonicNow() - started) / 1000);
        }
      },
    );
  }

  /**
   * A lock starts being held (right before its 'acquired' event). true: a meter or a diagnostics subscriber
   * would see its loss, so the loss must be noticed as it happens (lock.ts watch()).
   */
  lockAcquired(lock: Lock): boolean {
    if (!this.#metrics.live) return lockEventSubscribed('lost');
    this.#heldSince.set(lock, monotonicNow());
    this.#timed++;
    this.#metrics.lockHeld();
    return true;
  }

  /** A held lock ended, released or lost: called exactly once per lock that lockAcquired saw. */
  lockEnded(lock: Lock): void {
    if (this.#timed === 0) return;
    const since = this.#heldSince.get(lock);
    if (since === undefined) return;
    this.#heldSince.delete(lock);
    this.#timed--;
    this.#metrics.lockEnded(lock.lostError ? 'lost' : 'released', (monotonicNow() - since) / 1000);
  }

  extensionFailed(outcome: ExtensionFailure): void {
    this.#metrics.extensionFailed(outcome);
  }

  nodeQuarantined(node: string): void {
    this.#metrics.nodeQuarantined(node);
  }

  nodeRepaired(node: string, ms: number): void {
    this.#metrics.nodeRepaired(node, ms / 1000);
  }

  watchUntrusted(count: () => number): void {
    this.#metrics.watchUntrusted(count);
  }

  /** Every manager event passes through here, with the payload its listeners get. */
  event<E extends LockEventName>(event: E, payload: LockEvents[E][0]): void {
    switch (event) {
      case 'retry':
        this.#metrics.retried((payload as LockEvents['retry'][0]).reason);
        break;
      case 'nodeError': {
        const { node, operation, error } = payload as LockEvents['nodeError'][0];
        this.#metrics.nodeError(node, operation, error);
        break;
      }
      case 'released':
      case 'extended':
      case 'lost':
        publishLockEvent(event as 'released' | 'extended' | 'lost', payload as LockEvents['released' | 'extended' | 'lost'][0]);
        break;
    }
  }
}
