// Lock-worker processes over real nodes: a contended workload whose history
// the checker must find clean; freeze/thaw stop and continue a worker by PID.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { startRedisNode, startRedisNodes, type LocalRedisNode, type LocalRedisNodes } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import {
  checkHistory,
  FencedStore,
  freeze,
  startWorkers,
  thaw,
  type LockWorker,
  type WorkerPool,
  type WorkloadConfig,
} from '../support/faults/index.js';

let lockNodes: LocalRedisNodes;
let storage: LocalRedisNode;
let store: FencedStore;
const pools: WorkerPool[] = [];
before(async () => {
  [lockNodes, storage] = await Promise.all([startRedisNodes(5), startRedisNode()]);
  store = new FencedStore(storage.url);
});
after(async () => {
  await Promise.all(pools.map((p) => p.stop()));
  store?.close();
  await Promise.all([lockNodes?.stop(), storage?.stop()]);
});

const config = (resources: string[], durationMs: number): WorkloadConfig => ({
  lockUrls: lockNodes.urls,
  storageUrl: storage.url,
  resources,
  durationMs,
  workMs: 2,
  managerOptions: { ttl: 2_000, nodeTimeout: 100 },
});

async function logs(resources: string[]): Promise<Record<string, Awaited<ReturnType<FencedStore['log']>>>> {
  return Object.fromEntries(await Promise.all(resources.map(async (r) => [r, await store.log(r)] as const)));
}

/** Process state letter from /proc (R, S, T = stopped, ...), or undefined off Linux. */
function procState(pid: number): string | undefined {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return undefined;
  return readFileSync(file, 'utf8').replace(/^.*\) /s, '')[0];
}

describe('lock workers', () => {
  test('3 workers x 3 s over 5 nodes and 2 resources: a clean history', async () => {
    const resources = ['clean:a', 'clean:b'];
    const pool = await startWorkers(3, config(resources, 3_000));
    pools.push(pool);
    const exits = await pool.wait(30_000);
    const why = pool.workers.map((w) => `${w.id}: ${w.errors.join('; ')}\n${w.output()}`).join('\n');
    assert.deepEqual(
      exits.map((e) => [e.id, e.code, e.signal]),
      [
        ['w1', 0, null],
        ['w2', 0, null],
        ['w3', 0, null],
      ],
      why,
    );

    const records = pool.records();
    assert.ok(records.length >= 50, `only ${records.length} records`);
    for (const w of pool.workers) {
      assert.ok(w.records.length > 0, `${w.id} recorded nothing`);
      assert.ok(w.stats, `${w.id} sent no stats`);
      // Every holding is recorded, whatever its outcome.
      assert.ok(w.records.length >= w.stats.holds + w.stats.lost, `${w.id}: ${w.records.length} records for ${JSON.stringify(w.stats)}`);
    }
    const storeLogs = await logs(resources);
    const result = checkHistory(records, storeLogs);
    assert.deepEqual(result.violations, [], 'the checker found violations');

    // Nothing was lost in a clean run, so every write was accepted and no update was lost.
    assert.ok(!records.some((r) => r.endReason === 'lost'), 'a lock was lost in a fault-free run');
    for (const r of resources) {
      const accepted = storeLogs[r]!.filter((w) => w.accepted).length;
      assert.equal(storeLogs[r]!.length, accepted, `${r}: rejected writes in a clean run`);
      assert.equal((await store.read(r)).value, String(accepted), `${r}: lost updates`);
      const fences = new Set(records.filter((x) => x.resource === r).map((x) => x.fence));
      assert.ok(
        storeLogs[r]!.every((w) => fences.has(w.fence)),
        `${r}: a write by no recorded holder`,
      );
    }
  });

  test('freeze stops a worker (SIGSTOP by PID), thaw lets it go on; the history stays clean', async () => {
    const resources = ['freeze:a'];
    // A short lease, so that a worker frozen while holding the lock blocks the other one only briefly.
    // Long enough that w2 still runs when w1's place in the queue lapses (see below).
    const pool = await startWorkers(2, { ...config(resources, 8_000), managerOptions: { ttl: 500, nodeTimeout: 100 } });
    pools.push(pool);
    const [w1, w2] = pool.workers as [LockWorker, LockWorker];
    await eventually(() => w1.records.length > 0, 10_000);
    freeze(w1);
    if (procState(w1.pid) !== undefined) await eventually(() => procState(w1.pid) === 'T', 2_000);
    // Stopped from here on. A record w1 wrote just before may still be in the pipe and arrive later: what a
    // frozen worker must not send is a record of anything it did after this moment (one clock for all processes).
    const stoppedAt = process.hrtime.bigint();
    // The other worker goes on without w1: if w1 froze holding the lock, once its lease has run out; if it
    // froze waiting first in line, once its place in the queue has lapsed (queue lease 2 x 1000 + 4 x 100 ms)
    // and w2's next keep-place retry (at most retry.maxDelay) has found that.
    const w2At = w2.records.length;
    await eventually(() => w2.records.length >= w2At + 5, 10_000);
    const late = w1.records.filter((r) => r.acquiredAt > stoppedAt || r.endedAt > stoppedAt);
    assert.deepEqual(late, [], 'a frozen worker sent records of what it did while stopped');
    thaw(w1);
    if (procState(w1.pid) !== undefined) await eventually(() => procState(w1.pid) !== 'T', 2_000);
    const exits = await pool.wait(30_000);
    assert.deepEqual(
      exits.map((e) => e.code),
      [0, 0],
      pool.workers.map((w) => w.output()).join('\n'),
    );
    assert.ok(
      w1.records.some((r) => r.endedAt > stoppedAt),
      'w1 did nothing after thaw',
    );
    const result = checkHistory(pool.records(), await logs(resources));
    assert.deepEqual(result.violations, [], 'the checker found violations');
    assert.throws(() => freeze(w1), /not running/);
  });
});
