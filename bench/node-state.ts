// Node state figures for docs/reliability.md (issue 11), from one run on 5 local nodes:
// - keys and bytes per node after N distinct resources were locked and released;
// - time from an empty restart of one node to full fault tolerance (quarantine + repair), default ttl;
// - lock throughput during the quarantine and repair, next to before.
// Run: node --import tsx bench/node-state.ts [--resources 100000]
import { Redis } from 'ioredis';
import { LockManager } from '../src/index.js';
import { startRedisNodes } from '../src/testing/index.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RESOURCES = arg('--resources', 100_000);

async function usedMemory(admin: Redis): Promise<number> {
  const info = await admin.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

/** Acquire+release pairs per second over `ms`, 32 at a time, on distinct resources. */
async function throughput(m: LockManager, label: string, ms: number): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        const lock = await m.acquire(`tp:${label}:${n++}`, { timeout: 5_000 });
        await lock.release();
        done++;
      }
    }),
  );
  return Math.round((done * 1000) / ms);
}

const nodes = await startRedisNodes(5);
const admin = nodes.urls.map((u) => new Redis(u));
const m = new LockManager(nodes.urls);
try {
  await (await m.acquire('warm-up')).release();
  const keysBefore = await Promise.all(admin.map((a) => a.dbsize()));
  const memBefore = await Promise.all(admin.map(usedMemory));
  const t0 = performance.now();
  for (let i = 0; i < RESOURCES; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, RESOURCES - i) }, async (_, j) => (await m.acquire(`order:${i + j}`)).release()));
  }
  const lockSeconds = (performance.now() - t0) / 1000;
  const keysAfter = await Promise.all(admin.map((a) => a.dbsize()));
  const memAfter = await Promise.all(admin.map(usedMemory));
  console.log(`resources locked and released: ${RESOURCES} in ${lockSeconds.toFixed(1)} s`);
  console.log(`keys per node before/after: ${keysBefore.join(',')} / ${keysAfter.join(',')}`);
  console.log(`used_memory per node before/after (bytes): ${memBefore.join(',')} / ${memAfter.join(',')}`);

  const before = await throughput(m, 'before', 3_000);
  const repaired = new Promise<{ ms: number }>((resolve) => m.once('nodeRepaired', resolve));
  const quarantined = new Promise<{ until: number }>((resolve) => m.once('nodeQuarantined', resolve));
  const restartAt = performance.now();
  await nodes.nodes[0]!.restart();
  await (await m.acquire('notice-the-restart')).release();
  const { until } = await quarantined;
  console.log(`quarantine ends ${Math.round(until - Date.now() + (performance.now() - restartAt))} ms after the restart`);
  // A window around the end of the quarantine, when the repair runs.
  await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now() - 1_500)));
  const during = await throughput(m, 'during', 3_000);
  const repair = await repaired;
  const toleranceMs = performance.now() - restartAt;
  console.log(`empty restart to full fault tolerance: <= ${Math.round(toleranceMs)} ms (the repair itself ${repair.ms.toFixed(1)} ms)`);
  console.log(`acquire+release pairs/s: before ${before}, around the repair ${during}`);
  const after = await throughput(m, 'after', 3_000);
  console.log(`acquire+release pairs/s after repair: ${after}`);
} finally {
  await m.close();
  for (const a of admin) a.disconnect();
  await nodes.stop();
}
