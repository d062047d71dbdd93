import type { ResolvedRetry } from './options.js';

/**
 * Delay before retry number `attempt` (0-based): capped exponential growth,
 * with full jitter (uniform in [0, cap]) so that waiters that failed together
 * do not come back together.
 */
export function backoffDelay(retry: ResolvedRetry, attempt: number, random: () => number = Math.random): number {
  // A 1 ms floor under the growth: minDelay 0 must not turn waiting into a busy loop.
  const cap = Math.max(1, Math.min(retry.maxDelay, Math.max(1, retry.minDelay) * retry.factor ** Math.min(attempt, 64)));
  return retry.jitter === 'full' ? random() * cap : cap;
}
