// Soak: 5 worker processes x 200 concurrent lock users over 100 resources on 5
// nodes. The history must be clean, no worker may see an unhandled rejection or
// uncaught exception, and after close() every worker's heap, handles and the
// nodes' client connections must be back where they started.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { startRedisNode, startRedisNodes, type LocalRedisNode, type LocalRedisNodes } from '../../src/testing/index.js';
import { tsEntry } from '../support/entry.js';
import { eventually } from '../support/harness.js';
import { checkHistory, decodeRecord, storeLogs, type HistoryRecord } from '../support/faults/index.js';
import { scale } from './chaos-scale.js';
import type { SoakConfig, SoakMessage, SoakReport } from './soak-worker.js';
import { REPO_ROOT } from '../support/repo.js';

const WORKER_FILE = 'test/faults/soak-worker.ts';
const WORKERS = 5;
const USERS = 200;
const RESOURCES = 100;
const HEAP_SLACK = 20 * 1024 * 1024;

interface SoakWorker {
  readonly id: string;
  readonly child: ChildProcess;
  readonly records: HistoryRecord[];
  readonly fatals: string[];
  readonly errors: string[];
  report: SoakReport | undefined;
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  out: string;
}

let lockNodes: LocalRedisNodes;
let storage: LocalRedisNode;
const admins: Redis[] = [];
const children: ChildProcess[] = [];
before(async () => {
  [lockNodes, storage] = await Promise.all([startRedisNodes(5), startRedisNode()]);
  for (const url of [...lockNodes.urls, storage.url]) {
    const a = new Redis(url, { maxRetriesPerRequest: 1 });
    a.on('error', () => undefined);
    admins.push(a);
  }
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const a of admins) a.disconnect();
  await Promise.all([lockNodes?.stop(), storage?.stop()]);
});

function spawnWorker(id: string, config: SoakConfig): SoakWorker {
  const child = spawn(process.execPath, ['--expose-gc', ...tsEntry(WORKER_FILE), id, JSON.stringify(config)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  children.push(child);
  child.on('error', () => undefined);
  const w: SoakWorker = {
    id,
    child,
    records: [],
    fatals: [],
    errors: [],
    report: undefined,
    out: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    ready: new Promise((resolve, reject) => {
      child.once('exit', (code, signal) => reject(new Error(`${id} exited (${signal ?? code}) before ready\n${w.out}`)));
      child.on('message', (m: SoakMessage) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'records') for (const line of m.lines) w.records.push(decodeRecord(line));
        else if (m.type === 'fatal') w.fatals.push(m.message);
        else if (m.type === 'error') w.errors.push(m.message);
        else if (m.type === 'report') w.report = m.report;
      });
    }),
  };
  w.ready.catch(() => undefined);
  const keep = (d: Buffer): void => {
    w.out = (w.out + d.toString()).slice(-8_192);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return w;
}

function bounded<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)))]).finally(() => clearTimeout(timer));
}

async function clientCounts(): Promise<number[]> {
  return Promise.all(admins.map(async (a) => ((await a.client('LIST')) as string).split('\n').filter((l) => l.trim() !== '').length));
}

describe('soak: 5 workers x 200 concurrent users over 100 resources', () => {
  test('clean history, no unhandled errors, workers exit by themselves, no leaked heap, handles or connections', async () => {
    const durationMs = scale(10_000, 60_000);
    const resources = Array.from({ length: RESOURCES }, (_, i) => `soak:${i}`);
    const storePrefix = `soak:${process.hrtime.bigint()}:`;
    const clientsBefore = await clientCounts();
    const config: SoakConfig = {
      lockUrls: lockNodes.urls,
      storageUrl: storage.url,
      storePrefix,
      resources,
      users: USERS,
      durationMs,
      workMs: 2,
      acquireTimeout: 3_000,
      managerOptions: { ttl: 5_000, nodeTimeout: 1_000 },
    };
    const workers = Array.from({ length: WORKERS }, (_, i) => spawnWorker(`s${i + 1}`, config));
    const ready = await bounded(Promise.all(workers.map((w) => w.ready)), 60_000);
    assert.notEqual(ready, 'timeout', `workers not ready in 60 s\n${workers.map((w) => w.out).join('\n')}`);
    const t0 = performance.now();
    for (const w of workers) w.child.send({ type: 'go' });

    const exits = await bounded(Promise.all(workers.map((w) => w.exited)), durationMs + 60_000);
    const elapsed = performance.now() - t0;
    const why = workers.map((w) => `${w.id}: ${[...w.fatals, ...w.errors.slice(0, 3)].join('; ')}\n${w.out}`).join('\n');
    assert.notEqual(exits, 'timeout', `workers did not exit by themselves\n${why}`);
    assert.deepEqual(
      (exits as Array<{ code: number | null; signal: string | null }>).map((e) => [e.code, e.signal]),
      workers.map(() => [0, null]),
      why,
    );
    assert.deepEqual(
      workers.flatMap((w) => w.fatals),
      [],
      'unhandled rejection or uncaught exception in a worker',
    );

    const records = workers.flatMap((w) => w.records);
    const logs = await storeLogs(storage.url, storePrefix, resources);
    const result = checkHistory(records, logs);
    assert.deepEqual(result.violations.slice(0, 5), [], `the checker found ${result.violations.length} violations`);

    const reports = workers.map((w) => w.report);
    assert.ok(
      reports.every((r) => r !== undefined),
      `a worker sent no report\n${why}`,
    );
    const stats = reports.map((r) => r!.stats);
    const total = stats.reduce((a, s) => a + s.holds, 0);
    const writes = Object.values(logs).flat();
    const heapDeltas = reports.map((r) => r!.heapAfter - r!.heapBefore);
    const mb = (n: number): string => (n / 1024 / 1024).toFixed(1);

    // Connections: the nodes drop closed clients on their own time; wait (bounded) for the count to settle.
    let clientsAfter = await clientCounts();
    await eventually(
      async () => {
        clientsAfter = await clientCounts();
        return clientsAfter.every((c, i) => c <= clientsBefore[i]!);
      },
      5_000,
      50,
    ).catch(() => undefined);

    console.log(
      `# soak ${WORKERS}x${USERS} users, ${RESOURCES} resources, ${durationMs} ms: ${total} holds ` +
        `(${(total / (elapsed / 1000)).toFixed(0)} ops/s), ${records.length} records, ${writes.length} store writes ` +
        `(${writes.filter((w) => !w.accepted).length} rejected), ${result.violations.length} violations, ` +
        `timeouts ${stats.reduce((a, s) => a + s.timeouts, 0)}, lost ${stats.reduce((a, s) => a + s.lost, 0)}, ` +
        `errors ${stats.reduce((a, s) => a + s.errors, 0)}; heap deltas MB [${heapDeltas.map(mb).join(', ')}]; ` +
        `handles before/after ${JSON.stringify(reports[0]!.handlesBefore)} / ${JSON.stringify(reports.map((r) => r!.handlesAfter))}; ` +
        `clients before ${JSON.stringify(clientsBefore)} after ${JSON.stringify(clientsAfter)}; ` +
        `first errors ${JSON.stringify(workers.flatMap((w) => w.errors).slice(0, 3))}`,
    );

    // A floor, not a benchmark: 1000 users on 2 noisy cores are CPU-bound.
    assert.ok(total >= RESOURCES, `only ${total} holds in ${durationMs} ms`);
    for (const [i, s] of stats.entries()) assert.ok(s.holds > 0, `${workers[i]!.id} never held a lock`);
    assert.ok(records.length >= total, `${records.length} records for ${total} holds`);
    for (const [i, r] of reports.entries()) {
      assert.ok(
        heapDeltas[i]! < HEAP_SLACK,
        `${workers[i]!.id}: heap grew by ${mb(heapDeltas[i]!)} MB after close (limit ${mb(HEAP_SLACK)} MB)`,
      );
      assert.deepEqual(r!.handlesAfter, r!.handlesBefore, `${workers[i]!.id}: active handles after close differ from before the run`);
    }
    assert.deepEqual(clientsAfter, clientsBefore, 'CLIENT LIST counts on the nodes did not return to the pre-run counts');
  });
});
