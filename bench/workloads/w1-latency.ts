// W1 uncontended latency: one caller, sequential acquire + release on fresh keys.
// metrics: pairP50Ms, pairP99Ms, acquireP50Ms, acquireP99Ms, releaseP50Ms, releaseP99Ms
import { percentile } from '../stats.js';
import type { WorkloadResult } from '../types.js';
import { libraryOf, Meter, perOperation, type WorkloadContext } from './common.js';

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const { warmup, ops } = profile.w1;
  for (let i = 0; i < warmup; i++) await lib.release(await lib.acquire(`w1:warmup:${i}`));
  const acquire: number[] = [];
  const release: number[] = [];
  const pair: number[] = [];
  const meter = await Meter.start(admin);
  for (let i = 0; i < ops; i++) {
    const t0 = performance.now();
    const handle = await lib.acquire(`w1:${i}`);
    const t1 = performance.now();
    await lib.release(handle);
    const t2 = performance.now();
    acquire.push(t1 - t0);
    release.push(t2 - t1);
    pair.push(t2 - t0);
  }
  const { commands, cpu } = perOperation(await meter.stop(), ops);
  return {
    ops,
    metrics: {
      pairP50Ms: percentile(pair, 50),
      pairP99Ms: percentile(pair, 99),
      acquireP50Ms: percentile(acquire, 50),
      acquireP99Ms: percentile(acquire, 99),
      releaseP50Ms: percentile(release, 50),
      releaseP99Ms: percentile(release, 99),
    },
    commands,
    cpu,
    errors: 0,
  };
}
