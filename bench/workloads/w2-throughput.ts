// W2 uncontended throughput: many concurrent callers, each acquiring and releasing its own fresh keys in a loop.
// metrics: pairsPerSec, pairP50Ms, pairP99Ms, callers
import { percentile } from '../stats.js';
import type { WorkloadResult } from '../types.js';
import { closedLoop, libraryOf, warmup, type WorkloadContext } from './common.js';

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const { callers, durationMs } = profile.w2;
  await warmup(lib, profile.warmupPairs, 'w2');
  const { pairs, commands, cpu, errors, errorSample } = await closedLoop(lib, admin, callers, durationMs, (c, i) => `w2:${c}:${i}`);
  return {
    ops: pairs.length,
    metrics: {
      pairsPerSec: pairs.length / (durationMs / 1000),
      pairP50Ms: percentile(pairs, 50),
      pairP99Ms: percentile(pairs, 99),
      callers,
    },
    commands,
    cpu,
    errors,
    ...(errorSample ? { errorSample } : {}),
  };
}
