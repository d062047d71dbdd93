// The GC-pause scenario: a worker stopped (SIGSTOP) while it holds a lock for
// longer than the lease. When it resumes, its lock must be reported lost and its
// late write must be refused by the fence, while the others carried on safely.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisNode, startRedisNodes, type LocalRedisNode, type LocalRedisNodes } from '../../src/testing/index.js';
import { delay, eventually } from '../support/harness.js';
import {
  assertCleanExits,
  checkHistory,
  freeze,
  startWorkers,
  storeLogs,
  thaw,
  type LockWorker,
  type WorkerPool,
} from '../support/faults/index.js';
import { scale } from './chaos-scale.js';

const TTL = 600;

let lockNodes: LocalRedisNodes;
let storage: LocalRedisNode;
const pools: WorkerPool[] = [];
before(async () => {
  [lockNodes, storage] = await Promise.all([startRedisNodes(5), startRedisNode()]);
});
after(async () => {
  for (const p of pools) for (const w of p.workers) thaw(w);
  await Promise.all(pools.map((p) => p.stop()));
  await Promise.all([lockNodes?.stop(), storage?.stop()]);
});

describe('a lock holder paused (SIGSTOP) for more than 2 x ttl', () => {
  test('3 workers over 5 nodes: the paused holder loses its lock, its late write is rejected, the history is clean', async () => {
    const resource = 'pause:r';
    const storePrefix = `pause:${process.hrtime.bigint()}:`;
    const freezeMs = 2 * TTL + 300;
    // The worker reports each critical section as it starts; freezing it then catches it holding the lock,
    // between its read and its write (the work step is long so the freeze lands inside it).
    const maxFreezes = scale(8, 30);
    const wantLost = scale(1, 5);
    const durationMs = scale(10_000, 90_000);
    const pool = await startWorkers(3, {
      lockUrls: lockNodes.urls,
      storageUrl: storage.url,
      resources: [resource],
      durationMs,
      workMs: 150,
      storePrefix,
      managerOptions: { ttl: TTL, nodeTimeout: 100 },
      lockOptions: { timeout: 3_000 },
    });
    pools.push(pool);
    const runEnd = performance.now() + durationMs;
    const lostBy = (w: LockWorker): number => w.records.filter((r) => r.endReason === 'lost').length;

    let freezes = 0;
    let caught = 0;
    for (; freezes < maxFreezes && caught < wantLost && performance.now() + freezeMs + 2_000 < runEnd; freezes++) {
      const victim = pool.workers[freezes % pool.workers.length]!;
      await victim.nextHolding(10_000);
      const lostBefore = lostBy(victim);
      freeze(victim);
      try {
        // The pause is the fault's duration: a workload parameter.
        await delay(freezeMs);
      } finally {
        thaw(victim);
      }
      // After the thaw it records the holding it was in: 'lost' if the freeze caught it holding.
      const after = victim.records.length;
      await eventually(() => victim.records.length > after, 5_000);
      if (lostBy(victim) > lostBefore) caught++;
    }

    await assertCleanExits(pool, durationMs + 30_000);

    const records = pool.records();
    const logs = await storeLogs(storage.url, storePrefix, [resource]);
    const log = logs[resource]!;
    const result = checkHistory(records, logs);
    assert.deepEqual(result.violations, [], 'the checker found violations');

    const lost = records.filter((r) => r.endReason === 'lost');
    const rejected = log.filter((w) => !w.accepted);
    const stats = pool.workers.map((w) => w.stats);
    console.log(
      `# client pause ${freezeMs} ms (ttl ${TTL}): ${freezes} freezes, ${caught} caught a holder, ${records.length} records, ` +
        `${lost.length} lost, ${log.length} store writes, ${rejected.length} stale writes rejected, ` +
        `${result.violations.length} violations, stats ${JSON.stringify(stats)}`,
    );
    assert.ok(caught >= wantLost, `no freeze in ${freezes} caught a lock holder (${lost.length} lost records)`);
    assert.ok(lost.length >= caught, `${caught} freezes caught a holder but only ${lost.length} lost records`);
    // Each lost holder's write went out late, after a fresher write by the holder that took over: the fence refused it.
    const lostFences = new Set(lost.map((r) => r.fence));
    const rejectedLost = rejected.filter((w) => lostFences.has(w.fence)).length;
    assert.ok(rejectedLost >= 1, `no write of a lost holder was rejected (${rejected.length} rejected in all)`);
    assert.ok(
      rejected.every((w) => lostFences.has(w.fence)),
      'a write of a holder that never lost its lock was rejected',
    );
  });
});
