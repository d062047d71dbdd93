// Small statistics helpers: percentiles, fairness, rounding.
import type { Fairness } from './types.js';

/** Nearest-rank percentile of unsorted samples; null for no samples. */
export function percentile(samples: readonly number[], p: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? null;
}

export function max(samples: readonly number[]): number | null {
  return samples.length === 0 ? null : samples.reduce((a, b) => (b > a ? b : a), -Infinity);
}

export function fairness(perCaller: readonly number[]): Fairness {
  const n = perCaller.length;
  const sum = perCaller.reduce((a, b) => a + b, 0);
  const sumSq = perCaller.reduce((a, b) => a + b * b, 0);
  const min = n === 0 ? 0 : Math.min(...perCaller);
  const most = n === 0 ? 0 : Math.max(...perCaller);
  return {
    callers: n,
    perCaller: [...perCaller],
    min,
    max: most,
    maxMinRatio: min > 0 ? most / min : null,
    jain: sumSq > 0 ? (sum * sum) / (n * sumSq) : null,
  };
}

/** Round to `digits` decimals, keeping null. */
export function round(value: number | null | undefined, digits = 2): number | null {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function perOp(total: number, ops: number): number | null {
  return ops > 0 ? total / ops : null;
}
