// What an acquire call on a consensus store (etcd, ZooKeeper) does around the store's own pass: the deadline,
// the signal, a capped backoff after the store failed a step (a leader election, a member down), and the
// QuorumError that names the store. The store decides as one, so it is one node with a quorum of one.
import type { BackendHost, Grant, LeaseOps, LockInfo, WaitResult } from './backend.js';
import { backoffDelay } from './backoff.js';
import { monotonicNow } from './clock.js';
import { LockTimeoutError, NodeError, QuorumError } from './errors.js';
import type { ResolvedAcquire } from './options.js';

/** What one acquire call asks of a consensus store: its queues (one per resource), and what names it in messages. */
export interface ConsensusHold<Queue> {
  readonly queues: readonly Queue[];
  readonly resources: readonly string[];
  /** extend and release of the grant (the backend's) */
  readonly ops: LeaseOps;
}

/** One acquire call's clock: its options and signal, when it began, and when its timeout ends it (monotonic ms). */
export interface CallClock {
  readonly o: ResolvedAcquire;
  readonly signal: AbortSignal;
  readonly started: number;
  readonly deadline: number;
}

export function callClock(o: ResolvedAcquire, signal: AbortSignal): CallClock {
  const started = monotonicNow();
  return { o, signal, started, deadline: started + o.timeout };
}

/** Why a pass ended without a grant it could keep (its grant, if any, already given back). */
export const TOO_SLOW = 'granted, but too slowly to leave any validity';

/**
 * Runs `attempt` until it wins a grant. A pass that ends without one (a string saying why: its lease or
 * session ended while it waited, or the grant came too late to leave any validity) starts over at once; one
 * the store failed (a QuorumError) after a capped backoff; both while the call has time left. Bounded by the
 * deadline; the last pass's reason is the timeout's message.
 */
export async function untilGranted(
  call: CallClock & { readonly resources: readonly string[] },
  attempt: () => Promise<Grant | string>,
): Promise<WaitResult> {
  let attempts = 0;
  for (let failures = 0; ; attempts++) {
    call.signal.throwIfAborted();
    try {
      const won = await attempt();
      if (typeof won !== 'string') return { grant: won, attempts: attempts + 1, waited: monotonicNow() - call.started };
      if (monotonicNow() >= call.deadline) throw new LockTimeoutError(call.resources, call.o.timeout, won);
    } catch (error) {
      await pauseAfterFailure(call, error, failures++);
    }
  }
}

/**
 * The store failed a step (a QuorumError): worth another try after a capped backoff while the call has time
 * left. Anything else, or no time left: the error stands.
 */
export async function pauseAfterFailure(call: CallClock, error: unknown, failures: number): Promise<void> {
  if (!(error instanceof QuorumError) || call.o.timeout === 0) throw error;
  const pause = Math.min(backoffDelay(call.o.retry, failures), call.deadline - monotonicNow());
  if (pause <= 0) throw error;
  await sleep(pause, call.signal);
}

/**
 * `work`, or a rejection with the signal's reason as soon as it aborts (a manager's close(), the caller's own
 * signal): a call to a store out of reach must not hold a closed manager's waiter for the store's whole timeout.
 * `work` still settles on its own; its outcome is then nobody's.
 */
export function orAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  work.catch(() => undefined);
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort as () => void));
}

/** Resolves after `ms`, or rejects with the signal's reason (at once if it has already aborted). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const asNodeError = (store: string, error: unknown): NodeError =>
  error instanceof NodeError ? error : new NodeError(store, String(error), { cause: error });

/**
 * Tells the manager of a store's failed calls: its `nodeError` event (and the `fencelock.node.errors`
 * metric), as a Redis node's failures are. Once per failure: the same error met again on its way up (a
 * step's failure is wrapped, then paused on, then thrown) is not told twice.
 */
export class StoreFailures {
  readonly #told = new WeakSet<object>();

  constructor(
    private readonly node: string,
    private readonly host: BackendHost,
  ) {}

  /** Emits `nodeError` for `error` (as a NodeError naming the store), unless this very error was told already. */
  tell(error: unknown, operation: string, resources: readonly string[], nodeError = asNodeError(this.node, error)): void {
    if (typeof error === 'object' && error !== null) {
      if (this.#told.has(error)) return;
      this.#told.add(error);
    }
    this.host.emit('nodeError', { node: this.node, error: nodeError, operation, resources });
  }

  /** The failure as the QuorumError of a one-node quorum naming the store (`etcd://…`, `zk://…`), told to the manager first. */
  quorumError(resources: readonly string[], operation: string, error: unknown): QuorumError {
    const nodeError = asNodeError(this.node, error);
    this.tell(error, operation, resources, nodeError);
    return new QuorumError(resources, operation, 0, 1, [{ node: this.node, error: nodeError }]);
  }
}

/** What a consensus store knows of a resource's holder queue, for inspect. */
export interface QueueView {
  readonly owner: string | null;
  /** ms left on the holder's lease; -1 where only the holder's client can tell (a ZooKeeper session) */
  readonly remaining: number;
  readonly waiters: number;
  readonly fence: bigint;
}

/**
 * inspect on a store that decides as one: a single trusted node with a quorum of one. A store that cannot
 * be read is reported as that node's error, not thrown, as a Redis node that does not answer is.
 */
export async function inspectOneNode(resource: string, node: string, read: () => Promise<QueueView>): Promise<LockInfo> {
  try {
    const { owner, remaining, waiters, fence } = await read();
    const view = { node, owner, remaining, waiters, fence, state: 'trusted' as const, quarantinedFor: 0, error: null };
    return { resource, quorum: 1, holder: owner, fence, nodes: [view] };
  } catch (error) {
    const view = { node, owner: null, remaining: 0, waiters: 0, fence: null, state: null, quarantinedFor: 0, error: error as Error };
    return { resource, quorum: 1, holder: null, fence: 0n, nodes: [view] };
  }
}
