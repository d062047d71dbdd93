// Clock drift on lock nodes (libfaketime): a node whose clock runs fast expires
// keys early. Within driftFactor nothing breaks; far beyond it, a majority of
// fast nodes can let valid windows overlap, and only the fences save the store.
import { after, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisNode, startRedisNodes, type LocalRedisNode } from '../../src/testing/index.js';
import {
  checkHistory,
  faketimeAvailable,
  FencedStore,
  startDriftingNode,
  startWorkers,
  type CheckResult,
  type StoreWrite,
  type WorkerPool,
  type WorkloadConfig,
} from '../support/faults/index.js';
import { LONG } from './chaos-scale.js';
import { requireComponent } from '../support/optional.js';

const RUN_MS = LONG ? 20_000 : 3_000;
const skip = requireComponent(faketimeAvailable(), 'faketime (clock-drift tests)', 'faketime');

const started: LocalRedisNode[] = [];
const pools: WorkerPool[] = [];
const stores: FencedStore[] = [];
// Same workaround as network.test.ts: exit explicitly once all work is done.
process.once('beforeExit', () => process.exit());
after(async () => {
  await Promise.all(pools.map((p) => p.stop()));
  for (const s of stores) s.close();
  await Promise.all(started.map((n) => n.stop()));
});

interface Drifted {
  readonly result: CheckResult;
  readonly holds: number;
  readonly records: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly lost: number;
}

/** `fast` nodes at `rate` plus `normal` ordinary ones; a contended run of 3 workers; the checker's verdict. */
async function driftRun(
  t: TestContext,
  label: string,
  rate: number,
  fast: number,
  normal: number,
  config: Partial<WorkloadConfig>,
): Promise<Drifted> {
  const [drifting, plain, storage] = await Promise.all([
    Promise.all(Array.from({ length: fast }, () => startDriftingNode(rate))),
    startRedisNodes(normal),
    startRedisNode(),
  ]);
  started.push(...drifting, ...plain.nodes, storage);
  const store = new FencedStore(storage.url);
  stores.push(store);
  const resources = [`${label}:a`];
  const pool = await startWorkers(3, {
    lockUrls: [...drifting.map((n) => n.url), ...plain.urls],
    storageUrl: storage.url,
    resources,
    durationMs: RUN_MS,
    workMs: 2,
    ...config,
  });
  pools.push(pool);
  const exits = await pool.wait(RUN_MS + 30_000);
  assert.deepEqual(
    exits.map((e) => [e.code, e.signal]),
    [0, 0, 0].map(() => [0, null]),
    pool.workers.map((w) => `${w.id}: ${w.errors.join('; ')}\n${w.output()}`).join('\n'),
  );
  const records = pool.records();
  const log: StoreWrite[] = await store.log(resources[0]!);
  const result = checkHistory(records, { [resources[0]!]: log });
  const sum = (k: 'holds' | 'lost'): number => pool.workers.reduce((n, w) => n + (w.stats?.[k] ?? 0), 0);
  const d: Drifted = {
    result,
    holds: sum('holds'),
    records: records.length,
    accepted: log.filter((w) => w.accepted).length,
    rejected: log.filter((w) => !w.accepted).length,
    lost: sum('lost'),
  };
  t.diagnostic(
    `${label}: ${fast} node(s) at x${rate} + ${normal} normal: ${d.holds} holds, ${d.records} records, ` +
      `${d.lost} lost, store ${d.accepted} accepted / ${d.rejected} rejected, ${result.violations.length} checker findings`,
  );
  for (const v of result.violations.slice(0, 3)) t.diagnostic(`${label}: ${v}`);
  assert.ok(d.records >= 5, `${label}: only ${d.records} holdings recorded`);
  return d;
}

describe('clock drift', { skip, timeout: LONG ? 600_000 : 120_000 }, () => {
  test('1 of 5 nodes at x1.005 (within driftFactor 0.01): no violation', async (t) => {
    const d = await driftRun(t, 'drift1005', 1.005, 1, 4, { managerOptions: { ttl: 2_000, nodeTimeout: 200 } });
    assert.deepEqual(d.result.violations, [], 'the checker found violations');
  });

  test('1 of 5 nodes at x1.5: a quorum of normal nodes still holds, no violation', async (t) => {
    const d = await driftRun(t, 'drift15of5', 1.5, 1, 4, { managerOptions: { ttl: 1_000, nodeTimeout: 200 } });
    assert.deepEqual(d.result.violations, [], 'the checker found violations');
  });

  test('2 of 3 nodes at x1.5 (a fast majority), holding ~90% of the TTL without extension: fences still protect the store', async (t) => {
    // ttl 600: keys on the fast nodes expire after ~400 ms real time while holders believe in ~590 ms.
    const d = await driftRun(t, 'drift15of3', 1.5, 2, 1, {
      managerOptions: { ttl: 600, nodeTimeout: 100 },
      lockOptions: { autoExtend: false },
      workMs: 450,
    });
    const overlaps = d.result.violations.filter((v) => v.includes('overlapping valid windows'));
    const stale = d.result.violations.filter((v) => v.includes('store accepted a stale write'));
    t.diagnostic(`drift15of3: ${overlaps.length} overlapping valid windows found (timing-dependent, not asserted)`);
    // The fencing property must hold whatever the locks did.
    assert.deepEqual(stale, [], 'the store accepted a stale write');
    assert.equal(
      d.result.violations.filter((v) => v.includes('store rejected a fresh write')).length,
      0,
      'the store rejected a fresh write',
    );
  });
});
