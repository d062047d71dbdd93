/** Percentiles and the final report's numbers, kept apart from process plumbing. */

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

export interface Hold {
  readonly worker: number;
  readonly fence: bigint;
  readonly waitMs: number;
  /** ns on the shared monotonic clock */
  readonly acquiredAt: bigint;
  readonly releasedAt: bigint;
}

/** Idle time between one holder's end and the next holder's start, in ms (only successive, non-overlapping holds). */
export function handoffGaps(holds: readonly Hold[]): number[] {
  const ordered = [...holds].sort((a, b) => (a.acquiredAt < b.acquiredAt ? -1 : a.acquiredAt > b.acquiredAt ? 1 : 0));
  const gaps: number[] = [];
  for (let i = 1; i < ordered.length; i++) {
    const gap = Number((ordered[i] as Hold).acquiredAt - (ordered[i - 1] as Hold).releasedAt) / 1e6;
    if (gap >= 0) gaps.push(gap);
  }
  return gaps.sort((a, b) => a - b);
}

export interface DemoReport {
  readonly unitsSold: number;
  readonly stock: number;
  readonly stockLeft: number;
  /** units sold beyond the stock, plus sales lost to a double sale (two writers writing the same new value) */
  readonly oversold: number;
  readonly staleWritesRejected: number;
  readonly acquisitions: number;
  readonly locksLost: number;
  readonly acquireWaitMs: { readonly p50: number; readonly p99: number };
  readonly handoffGapMs: { readonly p50: number; readonly p99: number };
  readonly nodeFaultsSurvived: number;
  readonly workerFreezes: number;
  readonly fencesIncreasing: boolean;
  readonly wallTimeMs: number;
  readonly chaos: boolean;
  readonly events: readonly string[];
  /** the redis-server processes the demo started (all stopped when it returns) */
  readonly localNodes: ReadonlyArray<{ readonly url: string; readonly pid: number | undefined }>;
  readonly ok: boolean;
  readonly failures: readonly string[];
}
