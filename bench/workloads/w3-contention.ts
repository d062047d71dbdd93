// W3 contention in one process: callers on ONE key, acquire / hold / release / acquire again.
// metrics (see contention.ts summarize): acquisitions, acqPerSec, waitP50Ms, waitP99Ms, waitMaxMs, gapP50Ms, gapP99Ms,
// fairnessMaxMin, jain, overlaps, stuckCallers
import type { WorkloadResult } from '../types.js';
import { libraryOf, Meter, now, perOperation, sleepUntil, warmup, type WorkloadContext } from './common.js';
import { contend, summarize } from './contention.js';

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const { callers, holdMs, durationMs, drainMs } = profile.w3;
  await warmup(lib, profile.warmupPairs, 'w3');
  const meter = await Meter.start(admin);
  const startAt = now() + 20;
  const endAt = startAt + durationMs;
  const contention = contend(lib, { key: 'w3:resource', callers, holdMs, startAt, endAt, drainMs });
  await sleepUntil(endAt);
  const metered = await meter.stop(); // the window only: the drain's acquisitions are not counted either
  const record = await contention;
  const { metrics, fairness } = summarize([record], durationMs);
  const ops = record.holds.length;
  const { commands, cpu } = perOperation(metered, ops);
  return {
    ops,
    metrics: { ...metrics, callers },
    fairness,
    commands,
    cpu,
    errors: record.errors,
    ...(record.errorSample ? { errorSample: record.errorSample } : {}),
  };
}
