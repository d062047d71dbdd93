// Network faults between the client and the lock nodes: 5 real redis-server
// nodes, each behind its own TCP proxy (latency, blackhole, resets,
// partitions). Managers are given the proxy URLs, so they own the connections.
// Contended runs use lock-worker processes, the history checker and the fenced store.
import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { LockLostError, LockManager, QuorumError, type LockManagerOptions, type Lock } from '../../src/index.js';
import { startRedisNode, startRedisNodes, type LocalRedisNode, type LocalRedisNodes } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import {
  checkHistory,
  FencedStore,
  startProxy,
  startWorkers,
  type Proxy,
  type StoreWrite,
  type WorkerPool,
  type WorkloadConfig,
} from '../support/faults/index.js';
import { LONG } from './chaos-scale.js';

const RUN_MS = LONG ? 20_000 : 3_000;
const NODE_TIMEOUT = 200;
const WORKERS = 3;
const OPTS: LockManagerOptions = { ttl: 2_000, nodeTimeout: NODE_TIMEOUT };

let nodes: LocalRedisNodes;
let storage: LocalRedisNode;
let store: FencedStore;
let proxies: Proxy[] = [];
const pools: WorkerPool[] = [];
const managers: LockManager[] = [];

before(async () => {
  [nodes, storage] = await Promise.all([startRedisNodes(5), startRedisNode()]);
  proxies = await Promise.all(nodes.nodes.map((n) => startProxy(n.port)));
  store = new FencedStore(storage.url);
});
afterEach(() => {
  for (const p of proxies) {
    p.setLatency(0);
    p.heal();
  }
});
// Workaround (see report): after the proxy has cut connections, Node's exit-time handle
// cleanup (Environment::CleanupHandles) spins at 100% CPU forever. Once all work is done,
// exit explicitly, keeping the exit code the test runner set.
process.once('beforeExit', () => process.exit());
after(async () => {
  await Promise.all(pools.map((p) => p.stop()));
  for (const m of managers) await m.close().catch(() => undefined);
  store?.close();
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all([nodes?.stop(), storage?.stop()]);
});

const urls = (): string[] => proxies.map((p) => p.url);

/**
 * Cuts the path to a node: RST the open connections, then hold every byte of
 * new ones (a silent network, packets dropped). Not proxy.partition(): its RST of
 * freshly accepted connections leaves this process spinning at exit (see report).
 */
function cut(p: Proxy): void {
  p.blackhole();
  p.reset();
}

function manager(options: LockManagerOptions = OPTS): LockManager {
  const m = new LockManager(urls(), options);
  m.on('nodeError', () => undefined);
  managers.push(m);
  return m;
}

/** Rejects if `promise` has not settled within `ms`: nothing may hang. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const max = (xs: number[]): number => Math.max(...xs);

/** ms an operation took, and its outcome (value or error), never throwing. */
async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const t = performance.now();
  try {
    const value = await fn();
    return { ms: performance.now() - t, value };
  } catch (error) {
    return { ms: performance.now() - t, error };
  }
}

interface RunResult {
  readonly holds: number;
  readonly records: number;
  readonly violations: string[];
  readonly rejected: number;
  readonly lost: number;
  readonly errors: number;
  readonly recordsAt: (atMs: number) => number;
}

/**
 * A contended run: WORKERS workers over the proxies for RUN_MS on `resources`;
 * `during` injects the fault (it gets the pool and must finish within the run).
 */
async function contended(
  t: TestContext,
  label: string,
  resources: string[],
  during?: (pool: WorkerPool) => Promise<void>,
  config: Partial<WorkloadConfig> = {},
): Promise<RunResult> {
  const prefixed = resources.map((r) => `${label}:${r}`);
  const pool = await startWorkers(WORKERS, {
    lockUrls: urls(),
    storageUrl: storage.url,
    resources: prefixed,
    durationMs: RUN_MS,
    workMs: 2,
    managerOptions: OPTS,
    ...config,
  });
  pools.push(pool);
  const startedAt = process.hrtime.bigint();
  try {
    if (during) await during(pool);
  } finally {
    // Whatever the fault did, the run still ends: workers stop by themselves, or are killed.
    for (const p of proxies) p.heal();
  }
  const exits = await pool.wait((config.durationMs ?? RUN_MS) + 30_000);
  const why = pool.workers.map((w) => `${w.id}: ${w.errors.join('; ')}\n${w.output()}`).join('\n');
  assert.deepEqual(
    exits.map((e) => [e.code, e.signal]),
    pool.workers.map(() => [0, null]),
    `workers did not all exit cleanly\n${why}`,
  );
  const records = pool.records();
  const logs: Record<string, StoreWrite[]> = Object.fromEntries(
    await Promise.all(prefixed.map(async (r) => [r, await store.log(r)] as const)),
  );
  const result = checkHistory(records, logs);
  const sum = (k: 'holds' | 'rejected' | 'lost' | 'errors'): number => pool.workers.reduce((n, w) => n + (w.stats?.[k] ?? 0), 0);
  const run: RunResult = {
    holds: sum('holds'),
    records: records.length,
    violations: result.violations,
    rejected: sum('rejected'),
    lost: sum('lost'),
    errors: sum('errors'),
    recordsAt: (atMs) => records.filter((r) => r.acquiredAt - startedAt <= BigInt(Math.round(atMs * 1e6))).length,
  };
  t.diagnostic(
    `${label}: ${run.holds} holds, ${run.records} records, ${run.violations.length} violations, ` +
      `${run.rejected} stale writes rejected, ${run.lost} lost, ${run.errors} errors`,
  );
  assert.deepEqual(result.violations, [], `${label}: the checker found violations`);
  return run;
}

/** Every node answers through its proxy again (inspect reports no node error). */
async function allNodesAnswer(m: LockManager, resource: string): Promise<void> {
  await eventually(async () => (await m.inspect(resource)).nodes.every((n) => n.error === null), 10_000, 50);
}

describe('network faults (5 nodes behind proxies)', { timeout: LONG ? 600_000 : 120_000 }, () => {
  test('added latency: 50 ms on one node, 500 ms on another', async (t) => {
    proxies[0]!.setLatency(50); // round trip +100 ms: still inside nodeTimeout
    proxies[1]!.setLatency(500); // round trip +1 s: a failure for every request (nodeTimeout 200)
    const m = manager();
    const acquireMs: number[] = [];
    const releaseMs: number[] = [];
    const n = LONG ? 40 : 12;
    for (let i = 0; i < n; i++) {
      const a = await timed(() => m.acquire('lat:solo', { timeout: 5_000 }));
      assert.ok(a.value, `acquire ${i} failed: ${String(a.error)}`);
      acquireMs.push(a.ms);
      const lock: Lock = a.value;
      assert.ok(lock.isValid(), `acquire ${i}: lock not valid`);
      const r = await timed(() => lock.release());
      assert.ok(r.value, `release ${i} failed: ${String(r.error)}`);
      releaseMs.push(r.ms);
      // The slow node never counts; the other four do.
      assert.ok(r.value.released >= 3, `release ${i} reached only ${r.value.released} nodes`);
    }
    const p50 = median(acquireMs);
    t.diagnostic(
      `latency: acquire p50 ${p50.toFixed(0)} ms, max ${max(acquireMs).toFixed(0)} ms; release p50 ${median(releaseMs).toFixed(0)} ms`,
    );
    assert.ok(p50 < NODE_TIMEOUT + 100, `acquire p50 ${p50.toFixed(0)} ms >= nodeTimeout + 100 ms`);

    await contended(t, 'lat', ['a', 'b']);
  });

  test('blackholed connections on one, then two nodes: acquire within nodeTimeout + margin; heal', async (t) => {
    const m = manager();
    // Measured ~3 x nodeTimeout (~660 ms) per acquire while a node is silent (see report); margin for 2 noisy cores.
    const bound = 3 * NODE_TIMEOUT + 400;
    for (const cut of [1, 2]) {
      for (let i = 0; i < cut; i++) proxies[i]!.blackhole();
      const times: number[] = [];
      for (let i = 0; i < (LONG ? 20 : 6); i++) {
        const a = await timed(() => m.acquire(`bh${cut}:k`, { timeout: 5_000 }));
        assert.ok(a.value, `${cut} blackholed: acquire ${i} failed: ${String(a.error)}`);
        times.push(a.ms);
        const r = await within(a.value.release(), NODE_TIMEOUT + 1_000, 'release');
        assert.ok(r.released >= 5 - cut, `${cut} blackholed: release reached ${r.released} nodes`);
      }
      t.diagnostic(`blackhole x${cut}: acquire p50 ${median(times).toFixed(0)} ms, max ${max(times).toFixed(0)} ms (bound ${bound})`);
      assert.ok(max(times) < bound, `${cut} blackholed: slowest acquire ${max(times).toFixed(0)} ms >= ${bound} ms`);
      for (const p of proxies) p.heal();
      await allNodesAnswer(m, `bh${cut}:k`);
    }
    // After the heal, a lock lands on all five nodes.
    const lock = await m.acquire('bh:after', { timeout: 5_000 });
    try {
      const info = await m.inspect('bh:after');
      assert.equal(info.nodes.filter((v) => v.owner === lock.value).length, 5, 'healed: not every node holds the lock');
    } finally {
      await lock.release();
    }
  });

  test('connection resets mid-command on one node, repeatedly, during a contended run', async (t) => {
    let resets = 0;
    let midRecords = 0;
    const run = await contended(t, 'rst', ['a', 'b'], async (pool) => {
      const end = performance.now() + RUN_MS - 300;
      for (let i = 0; i < 10_000 && performance.now() < end; i++) {
        await new Promise((r) => setTimeout(r, 50));
        proxies[0]!.reset();
        resets++;
        if (i === 20) midRecords = pool.records().length;
      }
    });
    t.diagnostic(`resets: ${resets} resets of node 1`);
    assert.ok(resets >= 20, `only ${resets} resets`);
    assert.ok(run.holds >= 20, `throughput collapsed: ${run.holds} holds`);
    // Throughput continues: holdings start after the first 20 resets, right up to the end.
    assert.ok(run.records > midRecords, `no holdings after ${midRecords} records (after 20 resets)`);
    assert.ok(run.recordsAt(RUN_MS) - run.recordsAt(RUN_MS / 2) > 0, 'no holdings in the second half of the run');
  });

  test('a partition that cuts a minority (2 of 5): locks keep working, no violation; heal', async (t) => {
    let during = 0;
    let tookMs = 0;
    // With 2 of 5 cut, a quorum needs every one of the 3 live nodes, and so does a waiter's wake-up: one
    // notification it misses (a subscription that timed out under load) leaves it to its timer, up to
    // retry.maxDelay (1 s) per hand-over. The window for 3 holdings allows for that, and the workers run long
    // enough to hold it whenever the cut comes (a fixed 3 s run ended with the window in a loaded CI run).
    const window = 3 * (1_000 + 2 * NODE_TIMEOUT) + 1_000;
    await contended(
      t,
      'minp',
      ['a', 'b'],
      async (pool) => {
        await eventually(() => pool.records().length >= 3, 10_000);
        cut(proxies[0]!);
        cut(proxies[1]!);
        const at = pool.records().length;
        const cutAt = performance.now();
        // Bounded: progress while cut, through a majority of 3.
        await eventually(() => pool.records().length >= at + 3, window);
        tookMs = performance.now() - cutAt;
        during = pool.records().length - at;
        proxies[0]!.heal();
        proxies[1]!.heal();
      },
      { durationMs: RUN_MS + window },
    );
    t.diagnostic(`minority partition: ${during} holdings completed while 2 of 5 nodes were cut, in ${tookMs.toFixed(0)} ms`);
    assert.ok(during >= 3, `only ${during} holdings during the partition`);
    const m = manager();
    await allNodesAnswer(m, 'minp:a');
  });

  test('a partition that cuts the client from a majority (3 of 5): fail fast, held lock lost, heal', async (t) => {
    const ttl = 900;
    const m = manager({ ttl, nodeTimeout: NODE_TIMEOUT });
    const lost: unknown[] = [];
    m.on('lost', (e) => lost.push(e));
    let onHeld!: (lock: Lock) => void;
    const held = new Promise<Lock>((r) => (onHeld = r));
    const run = m.withLock(
      'majp:held',
      async (lock) => {
        onHeld(lock);
        await within(once(lock.signal, 'abort'), 10_000, 'the held lock was never reported lost');
        return 'fn resolved';
      },
      { ttl },
    );
    run.catch(() => undefined); // judged below
    const lock = await within(held, 5_000, 'withLock never acquired');
    const cutAt = performance.now();
    for (const p of proxies.slice(0, 3)) cut(p);

    const tryA = await within(
      timed(() => m.tryAcquire('majp:other')),
      5_000,
      'tryAcquire',
    );
    assert.ok(tryA.error instanceof QuorumError, `tryAcquire: expected QuorumError, got ${String(tryA.error ?? tryA.value)}`);
    const acq = await within(
      timed(() => m.acquire('majp:other', { timeout: 10_000 })),
      10_000,
      'acquire',
    );
    assert.ok(acq.error instanceof QuorumError, `acquire: expected QuorumError, got ${String(acq.error ?? acq.value)}`);
    t.diagnostic(`majority partition: tryAcquire rejected in ${tryA.ms.toFixed(0)} ms, acquire (timeout 10 s) in ${acq.ms.toFixed(0)} ms`);
    // One round is bounded by nodeTimeout (plus the release round); acquire retries a no-quorum round once.
    assert.ok(tryA.ms < 2 * NODE_TIMEOUT + 400, `tryAcquire took ${tryA.ms.toFixed(0)} ms`);
    assert.ok(acq.ms < 4 * NODE_TIMEOUT + 600, `acquire took ${acq.ms.toFixed(0)} ms (of a 10 s timeout)`);

    const outcome = await within(
      run.then(
        (v) => v,
        (e: unknown) => e,
      ),
      10_000,
      'withLock',
    );
    const lostAfter = performance.now() - cutAt;
    t.diagnostic(`majority partition: held lock (ttl ${ttl}) reported lost ${lostAfter.toFixed(0)} ms after the cut`);
    assert.ok(outcome instanceof LockLostError, `withLock: expected LockLostError, got ${String(outcome)}`);
    assert.ok(lock.signal.aborted, 'signal not aborted');
    assert.ok(lock.signal.reason instanceof LockLostError, `signal reason ${String(lock.signal.reason)}`);
    assert.equal(lock.isValid(), false);
    assert.ok(lost.length >= 1, "no 'lost' event");
    assert.ok(lostAfter < ttl + 1_000, `loss reported ${lostAfter.toFixed(0)} ms after the cut (ttl ${ttl})`);

    for (const p of proxies) p.heal();
    let after: Lock | undefined;
    for (let i = 0; i < 100 && !after; i++) {
      after = await m.acquire('majp:other', { timeout: 2_000 }).catch(() => undefined);
      if (!after) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(after, 'no acquire after the heal');
    assert.ok(after.isValid(), 'healed: lock not valid');
    await after.release();
  });
});
