// Repair racing live traffic: worker processes contend on 20 resources while a node restarts empty,
// sits out its quarantine and is repaired. The history stays clean: no overlapping holds, fences strictly
// rising per resource, store writes in fence order.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { markerKey } from '../../src/redis/keys.js';
import { startRedisNode, startRedisNodes, type LocalRedisNode, type LocalRedisNodes } from '../../src/testing/index.js';
import { delay, eventually } from '../support/harness.js';
import { assertCleanExits, checkHistory, startWorkers, storeLogs, type WorkerPool } from '../support/faults/index.js';
import { scale } from './chaos-scale.js';

let lockNodes: LocalRedisNodes;
let storage: LocalRedisNode;
let pool: WorkerPool | undefined;

before(async () => {
  [lockNodes, storage] = await Promise.all([startRedisNodes(5), startRedisNode()]);
});
after(async () => {
  await pool?.stop();
  await Promise.all([lockNodes?.stop(), storage?.stop()]);
});

describe('repair under load', () => {
  test('3 workers x 20 resources while a node restarts empty and is repaired: a clean history', async () => {
    const durationMs = scale(6_000, 40_000);
    const resources = Array.from({ length: 20 }, (_, i) => `repair:${i}`);
    const storePrefix = `repair:${process.hrtime.bigint()}:`;
    const ttl = 1_000;
    pool = await startWorkers(3, {
      lockUrls: lockNodes.urls,
      storageUrl: storage.url,
      resources,
      durationMs,
      workMs: 2,
      storePrefix,
      managerOptions: { ttl, nodeTimeout: 100 },
    });
    const admin = new Redis(lockNodes.nodes[0]!.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    try {
      await delay(durationMs * 0.25);
      const restartedAt = process.hrtime.bigint();
      await lockNodes.nodes[0]!.restart();
      // Whichever manager repairs it (a worker's, most likely), the node's marker says so; the events are per manager.
      await eventually(async () => (await admin.hget(markerKey('fencelock:'), 'trusted').catch(() => null)) === '1', 10_000, 20);
      const repairedAt = process.hrtime.bigint();

      await assertCleanExits(pool, durationMs + 30_000);
      const records = pool.records();
      const logs = await storeLogs(storage.url, storePrefix, resources);
      const result = checkHistory(records, logs);
      assert.deepEqual(result.violations, [], 'the checker found violations');
      const during = records.filter((r) => r.acquiredAt >= restartedAt && r.acquiredAt < repairedAt).length;
      const afterRepair = records.filter((r) => r.acquiredAt >= repairedAt).length;
      const writes = Object.values(logs).flat();
      console.log(
        `# repair under load: ${records.length} holds (${during} during quarantine and repair, ${afterRepair} after), ` +
          `${writes.length} store writes (${writes.filter((w) => !w.accepted).length} rejected), ${result.violations.length} violations`,
      );
      assert.ok(during > 0, 'the other 4 nodes kept serving during the quarantine');
      assert.ok(afterRepair > 0, 'locks granted after the repair');
      assert.equal(await admin.hget(markerKey('fencelock:'), 'trusted'), '1', 'the node is trusted again');
    } finally {
      admin.disconnect();
    }
  });
});
