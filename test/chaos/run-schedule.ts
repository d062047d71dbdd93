// Runs one fault schedule against real processes: five fresh lock nodes (each behind a TCP proxy), a storage
// node for the fenced store, the schedule's workers (workers.ts, each running its managers), and a nemesis applying the steps at their
// times. Every history goes through the checker (history.ts).
import { Redis } from 'ioredis';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { startProxy, startWorkers, thaw, type Proxy, type WorkerPool } from '../support/faults/index.js';
import { checkFastClocks, clocksApplied, FAST_RATE, startNodesAt } from './clocks.js';
import { addLatency, cutPaths, pauseServer, pauseWorker } from './shared-faults.js';
import { judge } from './verdict.js';
import { type Fault, type Schedule } from './schedule.js';

export interface Outcome {
  /** operations the workers attempted (holds, losses, timeouts, tryAcquire misses, errors) */
  readonly operations: number;
  /** steps the nemesis applied */
  readonly faults: number;
  /** the checker's findings, each naming both conflicting records */
  readonly violations: readonly string[];
  /** not violations, but worth a look: workers that did not exit cleanly, steps that failed to apply */
  readonly warnings: readonly string[];
  /** a fast-clocks schedule's node clock rates as measured before its workload (clocks.ts checkFastClocks) */
  readonly clockRates?: string;
  /** what the workers counted (holds, accepted and rejected writes, losses), shown with --verbose */
  readonly summary?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Applies one fault and undoes it when its time is up (a kill's node comes back empty). */
async function apply(
  f: Fault,
  nodes: { readonly nodes: readonly LocalRedisNode[] },
  proxies: readonly Proxy[],
  pool: WorkerPool,
): Promise<void> {
  const node = (i: number): LocalRedisNode => nodes.nodes[i]!;
  switch (f.kind) {
    case 'kill':
      await node(f.node).kill();
      await sleep(f.downMs);
      return node(f.node).restart({ keepData: false });
    case 'restart-empty':
      await Promise.all(f.nodes.map((i) => node(i).restart({ keepData: false })));
      return;
    case 'flushall': {
      const admin = new Redis(node(f.node).url, { maxRetriesPerRequest: 1, lazyConnect: true });
      admin.on('error', () => undefined);
      try {
        await admin.connect();
        await admin.flushall();
      } finally {
        admin.disconnect();
      }
      return;
    }
    case 'pause-node':
      return pauseServer(node(f.node), f.ms);
    case 'pause-worker':
      return pauseWorker(pool, f.worker, f.ms);
    case 'latency':
      return addLatency(proxies[f.node]!, f.latencyMs, f.ms);
    case 'cut':
      return cutPaths(
        f.nodes.map((i) => proxies[i]!),
        f.how,
        f.ms,
      );
  }
}

export async function runSchedule(s: Schedule): Promise<Outcome> {
  const warnings: string[] = [];
  const [started, storage] = await Promise.all([startNodesAt(s.clockRates), startRedisNode()]);
  const lockNodes = { nodes: started, stop: () => Promise.all(started.map((n) => n.stop())) };
  const proxies: Proxy[] = [];
  let pool: WorkerPool | undefined;
  try {
    // Fast clocks that did not take hold would pass for a protocol that held: measured first (clocks.ts).
    const clockRates =
      clocksApplied() && s.clockRates.some((r) => r >= FAST_RATE[0]) ? await checkFastClocks(started, s.clockRates) : undefined;
    proxies.push(...(await Promise.all(lockNodes.nodes.map((n) => startProxy(n.port)))));
    const storePrefix = `chaos:${s.seed}:`;
    pool = await startWorkers(s.workers, (i) => ({
      lockUrls: proxies.map((p) => p.url),
      storageUrl: storage.url,
      resources: s.resources,
      durationMs: s.durationMs,
      storePrefix,
      managerOptions: { nodeTimeout: s.nodeTimeout, restartQuarantine: s.restartQuarantine, ttl: 1_000 },
      variations: s.managers[i]!,
      ...(s.plantedFlaw ? { plantedFlaw: s.plantedFlaw } : {}),
    }));
    const start = performance.now();
    const running = pool;
    let faults = 0;
    const nemesis = s.steps.map(async (step, i) => {
      await sleep(Math.max(0, start + step.at - performance.now()));
      try {
        const applying = apply(step.fault, lockNodes, proxies, running);
        faults++;
        await applying;
      } catch (error) {
        warnings.push(`step ${i} (${step.fault.kind}) failed: ${(error as Error).message.split('\n')[0]}`);
      }
    });
    await Promise.all(nemesis);
    const { operations, violations, summary } = await judge(
      pool,
      s.durationMs + 20_000,
      { url: storage.url, prefix: storePrefix, resources: s.resources },
      warnings,
    );
    return { operations, faults, violations, warnings, summary, clockRates };
  } finally {
    if (pool) {
      for (const w of pool.workers) thaw(w);
      await pool.stop();
    }
    await Promise.all(proxies.map((p) => p.close()));
    for (const n of lockNodes.nodes) if (n.paused) n.resume();
    await Promise.all([lockNodes.stop(), storage.stop()]);
  }
}
