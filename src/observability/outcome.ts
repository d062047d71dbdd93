// Maps how an acquire ended onto the bounded set of outcomes the metrics and
// the acquire tracing channel report.
import { LockError } from '../errors.js';
import type { AcquireOutcome } from './metrics.js';

/** The outcome of an acquire that rejected with `error`; `signal` is the caller's own abort signal. */
export function acquireFailure(error: unknown, signal: AbortSignal | undefined): AcquireOutcome {
  // An aborted wait rejects with the signal's reason, which can be any value at all.
  if (signal?.aborted && error === signal.reason) return 'aborted';
  if (!(error instanceof LockError)) return 'error';
  switch (error.code) {
    case 'ACQUIRE_TIMEOUT':
      return 'timeout';
    case 'NO_QUORUM':
      return 'no_quorum';
    case 'CLOSED': // close() cut the wait short: the manager's own abort
      return 'aborted';
    default:
      return 'error';
  }
}
