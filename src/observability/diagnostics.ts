// node:diagnostics_channel hooks for APM tools. Publishing to a channel nobody
// subscribes to costs one property read, so every publish checks that first.
import { channel, tracingChannel, type Channel, type TracingChannel } from 'node:diagnostics_channel';
import type { LockEvents } from '../events.js';
import type { Lock } from '../lock.js';
import type { AcquireMethod, AcquireOutcome } from './metrics.js';

/** Channel names. `acquire` is a tracing channel: subscribe to `tracing:fencelock:acquire:start` etc., or through `tracingChannel('fencelock:acquire')`. */
export const DIAGNOSTICS_CHANNELS = Object.freeze({
  /** a `tracingChannel`: start/end/asyncStart/asyncEnd/error of every acquire, with an {@link AcquireTraceContext} */
  acquire: 'fencelock:acquire',
  /** a channel: one message per release, the `released` event's payload */
  release: 'fencelock:release',
  /** a channel: one message per extension, the `extended` event's payload */
  extend: 'fencelock:extend',
  /** a channel: one message per lost lock, the `lost` event's payload */
  lost: 'fencelock:lost',
} as const);

/**
 * The context object of one acquire on the `fencelock:acquire` tracing channel.
 * The same object goes to start, end, asyncStart, asyncEnd and error, so a
 * subscriber can keep its span on it. `outcome` is set before asyncStart.
 */
export interface AcquireTraceContext {
  /** which call: 'acquire', 'tryAcquire' or 'withLock' */
  readonly method: AcquireMethod;
  /** the resources asked for */
  readonly resources: readonly string[];
  /** lease asked for, ms */
  readonly ttl: number;
  /** max wait, ms (0 for tryAcquire) */
  readonly timeout: number;
  /** how it ended ('acquired', 'timeout', 'busy', 'no_quorum', …), set before the end event */
  outcome?: AcquireOutcome;
  /** set by Node on success: the Lock, or null for a tryAcquire that found the lock busy */
  result?: Lock | null;
  /** set by Node on failure: what the call rejects with */
  error?: unknown;
}

const acquireChannel: TracingChannel<unknown, AcquireTraceContext> = tracingChannel(DIAGNOSTICS_CHANNELS.acquire);
const releaseChannel = channel(DIAGNOSTICS_CHANNELS.release);
const extendChannel = channel(DIAGNOSTICS_CHANNELS.extend);
const lostChannel = channel(DIAGNOSTICS_CHANNELS.lost);

/** `TracingChannel.hasSubscribers` only exists from Node 20.13; before that, ask its five channels. */
export function tracing(): boolean {
  const c = acquireChannel as TracingChannel<unknown, AcquireTraceContext> & { hasSubscribers?: boolean };
  if (typeof c.hasSubscribers === 'boolean') return c.hasSubscribers;
  return [c.start, c.end, c.asyncStart, c.asyncEnd, c.error].some((ch) => ch.hasSubscribers);
}

/** Runs `run` inside the acquire tracing channel when anyone listens; `context()` is only built then. */
export function traceAcquire<T>(
  context: () => AcquireTraceContext,
  run: (context: AcquireTraceContext | undefined) => Promise<T>,
): Promise<T> {
  if (!tracing()) return run(undefined);
  const ctx = context();
  return acquireChannel.tracePromise(() => run(ctx), ctx);
}

function channelOf(event: 'released' | 'extended' | 'lost'): Channel {
  return event === 'released' ? releaseChannel : event === 'extended' ? extendChannel : lostChannel;
}

/** Someone subscribes to the channel of this lock event: its payload must be built. */
export function lockEventSubscribed(event: 'released' | 'extended' | 'lost'): boolean {
  return channelOf(event).hasSubscribers;
}

/** Publishes a lock event's own payload (the very object the event listeners get: treat it as read-only). */
export function publishLockEvent<E extends 'released' | 'extended' | 'lost'>(event: E, payload: LockEvents[E][0]): void {
  const target = channelOf(event);
  if (target.hasSubscribers) target.publish(payload);
}
