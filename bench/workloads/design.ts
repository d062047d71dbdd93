// The design's throughput table: on 3 nodes, N clients at once, each looping acquire + release on a key of its
// own (no contention), for a fixed time. One cell per (client count, library), each in a fresh process after the
// usual warm-up. An op is one acquire + release pair, the unit a caller waits for; its latency is the pair's.
// metrics: opsPerSec, meanMs, p50Ms, p99Ms, clients
import { percentile } from '../stats.js';
import type { WorkloadResult } from '../types.js';
import { closedLoop, libraryOf, warmup, type WorkloadContext } from './common.js';

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile, spec } = ctx;
  const lib = libraryOf(ctx);
  const clients = spec.clients;
  if (clients === undefined || !(clients > 0)) throw new Error('a design cell needs its client count (spec.clients)');
  const { durationMs } = profile.design;
  await warmup(lib, profile.warmupPairs, 'design');
  const { pairs, commands, cpu, errors, errorSample } = await closedLoop(lib, admin, clients, durationMs, (c) => `design:${c}`);
  return {
    ops: pairs.length,
    metrics: {
      opsPerSec: pairs.length / (durationMs / 1000),
      meanMs: pairs.length === 0 ? null : pairs.reduce((a, b) => a + b, 0) / pairs.length,
      p50Ms: percentile(pairs, 50),
      p99Ms: percentile(pairs, 99),
      clients,
    },
    commands,
    cpu,
    errors,
    ...(errorSample ? { errorSample } : {}),
  };
}
