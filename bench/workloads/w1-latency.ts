// W1 uncontended latency: one caller, sequential acquire + release on fresh keys, in a fresh process.
// The process's first pairs are the warm-up (profile.warmupPairs, 200): they are timed too, as the cold path a
// CLI, a cron job or a short-lived worker pays (scripts not yet loaded on the nodes, JIT cold), beside the warm
// figures of the timed pairs after them.
// metrics: pairP50Ms, pairP99Ms, acquireP50Ms, acquireP99Ms, releaseP50Ms, releaseP99Ms (warm);
//          firstPairMs (the process's first pair), first100MeanMs, first100P50Ms (its first min(100, warm-up) pairs)
import { percentile } from '../stats.js';
import type { LockLibrary, WorkloadResult } from '../types.js';
import { libraryOf, Meter, perOperation, type WorkloadContext } from './common.js';

/** How many of the process's first pairs make the cold figure (fewer if the warm-up is shorter). */
export const COLD_PAIRS = 100;

interface Timed {
  acquire: number[];
  release: number[];
  pair: number[];
}

/** `count` acquire + release pairs on fresh keys, one after the other, each timed (also bench/placement.ts). */
export async function timedPairs(lib: LockLibrary, prefix: string, count: number): Promise<Timed> {
  const t: Timed = { acquire: [], release: [], pair: [] };
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const handle = await lib.acquire(`${prefix}:${i}`);
    const t1 = performance.now();
    await lib.release(handle);
    const t2 = performance.now();
    t.acquire.push(t1 - t0);
    t.release.push(t2 - t1);
    t.pair.push(t2 - t0);
  }
  return t;
}

const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const cold = (await timedPairs(lib, 'w1:warmup', profile.warmupPairs)).pair;
  const first = cold.slice(0, COLD_PAIRS);
  const { ops } = profile.w1;
  const meter = await Meter.start(admin);
  const warm = await timedPairs(lib, 'w1', ops);
  const { commands, cpu } = perOperation(await meter.stop(), ops);
  return {
    ops,
    metrics: {
      pairP50Ms: percentile(warm.pair, 50),
      pairP99Ms: percentile(warm.pair, 99),
      acquireP50Ms: percentile(warm.acquire, 50),
      acquireP99Ms: percentile(warm.acquire, 99),
      releaseP50Ms: percentile(warm.release, 50),
      releaseP99Ms: percentile(warm.release, 99),
      firstPairMs: cold[0] ?? null,
      first100MeanMs: mean(first),
      first100P50Ms: percentile(first, 50),
      coldPairs: first.length,
    },
    commands,
    cpu,
    errors: 0,
  };
}
