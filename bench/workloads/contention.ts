// The contention loop of W3 and W4: callers on ONE key; acquire, hold, release, immediately acquire again.
// Times are on the machine-wide clock of common.ts, so holds recorded by different processes can be merged.
import { setTimeout as sleep } from 'node:timers/promises';
import { fairness, max, percentile } from '../stats.js';
import type { Fairness, LockLibrary } from '../types.js';
import { errorText, now, settleWithin, sleepUntil } from './common.js';

export interface Hold {
  caller: number;
  /** acquire() called */
  requestedAt: number;
  /** acquire() resolved: holding */
  acquiredAt: number;
  /** release() called */
  releasedAt: number;
}

export interface ContentionRecord {
  /** holds whose acquire resolved inside the window */
  holds: Hold[];
  /** every acquire started inside the window: time until it resolved or rejected, drain included; callers still
   * waiting at the drain limit are counted with their wait so far */
  waits: number[];
  /** per caller: acquisitions inside the window */
  perCaller: number[];
  errors: number;
  errorSample?: string;
  /** callers still waiting when the drain limit ran out (their acquire is abandoned, the cell process exits) */
  stuck: number;
}

export interface ContentionOptions {
  key: string;
  callers: number;
  holdMs: number;
  startAt: number;
  endAt: number;
  /** how long callers still waiting at endAt may take to get (and drop) the lock */
  drainMs: number;
}

export async function contend(lib: LockLibrary, o: ContentionOptions): Promise<ContentionRecord> {
  const rec: ContentionRecord = { holds: [], waits: [], perCaller: new Array<number>(o.callers).fill(0), errors: 0, stuck: 0 };
  const waitingSince: Array<number | undefined> = new Array<number | undefined>(o.callers).fill(undefined);
  let closed = false; // after the drain limit: nothing more is recorded
  const caller = async (c: number): Promise<void> => {
    await sleepUntil(o.startAt);
    while (now() < o.endAt && !closed) {
      const requestedAt = now();
      waitingSince[c] = requestedAt;
      let handle: unknown;
      try {
        handle = await lib.acquire(o.key);
      } catch (e) {
        waitingSince[c] = undefined;
        if (closed) return;
        rec.waits.push(now() - requestedAt);
        rec.errors++;
        rec.errorSample ??= errorText(e);
        await sleep(1);
        continue;
      }
      waitingSince[c] = undefined;
      const acquiredAt = now();
      if (!closed) rec.waits.push(acquiredAt - requestedAt);
      if (acquiredAt > o.endAt) {
        await lib.release(handle); // the drain: let the others through, uncounted
        return;
      }
      await sleep(o.holdMs);
      const releasedAt = now();
      rec.holds.push({ caller: c, requestedAt, acquiredAt, releasedAt });
      rec.perCaller[c] = (rec.perCaller[c] ?? 0) + 1;
      await lib.release(handle);
    }
  };
  const callers = Array.from({ length: o.callers }, (_, c) =>
    caller(c).catch((e: unknown) => {
      rec.errors++;
      rec.errorSample ??= errorText(e);
    }),
  );
  await sleepUntil(o.endAt);
  if (!(await settleWithin(callers, o.drainMs))) {
    // still waiting at the drain limit: counted with the wait so far, a lower bound of their real wait
    closed = true;
    const at = now();
    for (const since of waitingSince) {
      if (since === undefined) continue;
      rec.waits.push(at - since);
      rec.stuck++;
    }
  }
  return rec;
}

export interface ContentionSummary {
  metrics: Record<string, number | null>;
  fairness: Fairness;
}

/**
 * Handoff gap: from a holder calling release() to the next holder's acquire() resolving (holds ordered by
 * acquisition; the gap includes the release round trip). An overlap is a hold that began before the previous one
 * was released: a mutual-exclusion violation, or, across processes, clock error between them.
 */
export function summarize(records: readonly ContentionRecord[], durationMs: number): ContentionSummary {
  const holds = records.flatMap((r) => r.holds).sort((a, b) => a.acquiredAt - b.acquiredAt);
  const waits = records.flatMap((r) => r.waits);
  const gaps: number[] = [];
  let overlaps = 0;
  for (let i = 1; i < holds.length; i++) {
    const prev = holds[i - 1] as Hold;
    const cur = holds[i] as Hold;
    const gap = cur.acquiredAt - prev.releasedAt;
    if (gap < 0) overlaps++;
    gaps.push(gap);
  }
  const fair = fairness(records.flatMap((r) => r.perCaller));
  return {
    metrics: {
      acquisitions: holds.length,
      acqPerSec: holds.length / (durationMs / 1000),
      waitP50Ms: percentile(waits, 50),
      waitP99Ms: percentile(waits, 99),
      waitMaxMs: max(waits),
      gapP50Ms: percentile(gaps, 50),
      gapP99Ms: percentile(gaps, 99),
      fairnessMaxMin: fair.maxMinRatio,
      jain: fair.jain,
      overlaps,
      stuckCallers: records.reduce((a, r) => a + r.stuck, 0),
    },
    fairness: fair,
  };
}
