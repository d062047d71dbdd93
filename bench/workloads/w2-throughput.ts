// W2 uncontended throughput: many concurrent callers, each acquiring and releasing its own fresh keys in a loop.
// metrics: pairsPerSec, pairP50Ms, pairP99Ms, callers
import { percentile } from '../stats.js';
import type { WorkloadResult } from '../types.js';
import { errorText, libraryOf, Meter, now, perOperation, sleepUntil, warmup, type WorkloadContext } from './common.js';

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const { callers, durationMs } = profile.w2;
  await warmup(lib, profile.warmupPairs, 'w2');
  const pairs: number[] = [];
  let errors = 0;
  let errorSample: string | undefined;
  const meter = await Meter.start(admin);
  const startAt = now() + 20;
  const endAt = startAt + durationMs;
  await sleepUntil(startAt);
  const caller = async (c: number): Promise<void> => {
    for (let i = 0; now() < endAt; i++) {
      const t0 = performance.now();
      try {
        await lib.release(await lib.acquire(`w2:${c}:${i}`));
        if (now() <= endAt) pairs.push(performance.now() - t0);
      } catch (e) {
        errors++;
        errorSample ??= errorText(e);
      }
    }
  };
  const running = Array.from({ length: callers }, (_, c) => caller(c));
  await sleepUntil(endAt);
  const metered = await meter.stop();
  await Promise.all(running);
  const { commands, cpu } = perOperation(metered, pairs.length);
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
