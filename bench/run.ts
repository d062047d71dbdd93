// `npm run bench`: starts five redis-server nodes (and a 3-member etcd cluster and a 3-server ZooKeeper ensemble),
// runs every (workload, library, mode) cell in a fresh process on them (plan.ts), then the workloads that are
// scripts of their own (external.ts: burst), and writes the JSON, the docs page and the chart. See
// docs/benchmarks.md and `--help`.
import {
  startEtcdCluster,
  startRedisNodes,
  startZooKeeperEnsemble,
  type LocalEtcdCluster,
  type LocalRedisNodes,
  type LocalZooKeeperEnsemble,
} from '../src/testing/index.js';
import { medianRun } from './repeats.js';
import { PARTIAL_OUT, parseArgs } from './args.js';
import { previousEntry } from './previous.js';
import { commonSettings, ETCD_MEMBERS, MODE_LABEL, NODE_COUNT, PROFILES, ZOOKEEPER_CONFIG, ZOOKEEPER_SERVERS } from './config.js';
import { externalWorkload, runExternal } from './external.js';
import { LIBRARIES, libraryEntry } from './libraries/index.js';
import { fencelockCommit, machineInfo, packageVersion } from './machine.js';
import { planRun } from './plan.js';
import { RedisAdmin } from './redis-admin.js';
import { firstLine, num } from './report/format.js';
import { consoleSummary } from './report/markdown.js';
import { writeOutputs } from './report/write.js';
import { killRunning, runCells } from './spawn-cell.js';
import type { CellId, CellResult, CellSpec, ExternalResult, Mode, RunReport } from './types.js';

const HEADLINE: Record<string, Array<[string, string]>> = {
  W1: [
    ['pairP50Ms', 'p50 ms'],
    ['pairP99Ms', 'p99 ms'],
    ['firstPairMs', 'first pair ms'],
    ['first100MeanMs', 'first 100 mean ms'],
  ],
  W2: [['pairsPerSec', 'pairs/s']],
  W3: [
    ['acqPerSec', 'acq/s'],
    ['waitP99Ms', 'wait p99 ms'],
    ['fairnessMaxMin', 'max/min'],
  ],
  W4: [
    ['acqPerSec', 'acq/s'],
    ['waitP99Ms', 'wait p99 ms'],
    ['fairnessMaxMin', 'max/min'],
  ],
  W5: [
    ['heapBytesPerLock', 'heap B/lock'],
    ['eventLoopDelayP99Ms', 'ELD p99 ms'],
  ],
  design: [
    ['opsPerSec', 'ops/s'],
    ['meanMs', 'mean ms'],
  ],
};

function headline(c: CellResult): string {
  const mode = c.workload === 'design' ? `${MODE_LABEL[c.mode]}, ${c.clients} clients` : MODE_LABEL[c.mode];
  const where = `${c.workload.padEnd(6)} ${mode.padEnd(20)} ${c.library.padEnd(24)}`;
  if (c.status !== 'ok') return `${where} ${c.status}${c.error ? `: ${firstLine(c.error, 120)}` : ''}`;
  const metrics = (HEADLINE[c.workload] ?? []).map(([k, label]) => `${label} ${num(c.metrics?.[k])}`);
  const extra = [
    `cmds/op ${num(c.commands?.perOp)}`,
    `CPU µs/op ${num(c.cpu?.perOpUs)}`,
    `Redis CPU µs/op ${num(c.commands?.redisCpuPerOpUs)}`,
    ...(c.errors ? [`errors ${c.errors}`] : []),
  ];
  return `${where} ${[...metrics, ...extra].join('  ')}  (${(c.wallMs / 1000).toFixed(1)} s)`;
}

function commandLine(argv: readonly string[]): string {
  const extra = argv.join(' ');
  if (process.env.npm_lifecycle_event === 'bench') return `npm run bench${extra ? ` -- ${extra}` : ''}`;
  return `node --import tsx bench/run.ts${extra ? ` ${extra}` : ''}`;
}

interface Servers {
  nodes: LocalRedisNodes;
  etcd: Promise<LocalEtcdCluster> | undefined;
  zookeeper: Promise<LocalZooKeeperEnsemble> | undefined;
}

/**
 * The Redis nodes now; etcd and ZooKeeper (when some cell runs on them) started alongside and awaited only by
 * their first cell: a ZooKeeper ensemble takes seconds to start, time the Redis cells use meanwhile. Each is
 * started once (their data grows with the run: fine).
 */
async function startServers(modes: ReadonlySet<Mode>): Promise<Servers> {
  const etcd = modes.has('etcd3') ? startEtcdCluster({ members: ETCD_MEMBERS }) : undefined;
  const zookeeper = modes.has('zk3') ? startZooKeeperEnsemble({ servers: ZOOKEEPER_SERVERS, config: ZOOKEEPER_CONFIG }) : undefined;
  // a cluster that failed to start fails its cells, when they await it; no unhandled rejection before
  etcd?.catch(() => undefined);
  zookeeper?.catch(() => undefined);
  try {
    return { nodes: await startRedisNodes(NODE_COUNT), etcd, zookeeper };
  } catch (e) {
    await stopServers({ nodes: undefined, etcd, zookeeper });
    throw e;
  }
}

async function stopServers(s: {
  nodes: LocalRedisNodes | undefined;
  etcd: Servers['etcd'];
  zookeeper: Servers['zookeeper'];
}): Promise<void> {
  await Promise.allSettled([s.nodes?.stop(), s.etcd?.then((c) => c.stop()), s.zookeeper?.then((z) => z.stop())]);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const args = parseArgs(argv);
  const profile = PROFILES[args.profile];
  // a part of a run (or a smoke run) must not replace the docs page's full results
  const outDir = args.outDir ?? (args.partial || args.profile === 'quick' ? PARTIAL_OUT : undefined);
  const started = performance.now();
  const startedAt = new Date();

  // Built before any cell starts, so that cells do not race to build it. Without git history (a shallow
  // clone, a tarball) there is nothing to build: the run goes on without it and says why.
  if (args.libraries.includes('fencelock/ioredis@previous')) {
    try {
      console.log(`previous release: ${previousEntry()}`);
    } catch (error) {
      console.log(`previous release left out: ${firstLine(String(error), 200)}`);
      args.libraries = args.libraries.filter((id) => id !== 'fencelock/ioredis@previous');
    }
  }
  const plan = planRun(args, profile);
  const libs = [...new Set(plan.cells.map((c) => c.library))].map(libraryEntry);
  const settings: RunReport['settings'] = {
    common: commonSettings(),
    workloads: {
      profile: args.profile,
      warmupPairs: profile.warmupPairs,
      repeats: profile.repeats,
      W1: profile.w1,
      W2: profile.w2,
      W3: profile.w3,
      W4: profile.w4,
      W5: profile.w5,
      design: profile.design,
    },
    libraries: Object.fromEntries(await Promise.all(libs.map(async (l) => [l.id, (await l.load()).settings] as const))),
  };
  const running = plan.batches.flat().length;
  console.log(
    `fencelock benchmark, ${args.profile} profile${args.smokePlan ? ' (the smoke run, bench/smoke.ts)' : ''}: ` +
      `${plan.cells.length} cells (${running} to run, in ${plan.batches.length} processes) of ${args.workloads.join(' ')}` +
      ` x ${libs.length} libraries${args.external.length ? `, then ${args.external.join(' ')}` : ''}`,
  );
  console.log(JSON.stringify(settings, null, 2));

  // until our handlers are installed, a Ctrl-C is handled by fencelock/testing, which kills the nodes itself
  const servers = await startServers(new Set(plan.batches.flat().map((i) => plan.cells[i]?.mode as Mode)));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${signal}: stopping the running cell, the Redis nodes, etcd and ZooKeeper`);
    killRunning();
    void stopServers(servers).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killRunning);

  const results: Array<CellResult | undefined> = plan.cells.map((c) =>
    c.skip ? { ...c, status: 'n/a', wallMs: 0, error: c.skip } : undefined,
  );
  // every run of each cell (a repeated one runs several times: repeats.ts); the report takes the median run
  const runs: CellResult[][] = plan.cells.map(() => []);
  let redisVersion = 'unknown';
  const urls = servers.nodes.urls;
  try {
    const admin = await RedisAdmin.connect(urls);
    try {
      redisVersion = await admin.redisVersion();
    } finally {
      await admin.close();
    }
    for (const batch of plan.batches) {
      // Stopped by a signal: no report of a partial run (and no exit code 0 for it).
      if (stopping) throw new Error('stopped by a signal before every cell ran');
      const cells = batch.map((i) => plan.cells[i] as CellId);
      let specs: CellSpec[];
      try {
        specs = await Promise.all(
          cells.map(async (c) => ({ ...c, urls: await targets(servers, c.mode), statsUrls: urls, profile: args.profile })),
        );
      } catch (e) {
        // etcd or ZooKeeper did not start: their cells fail with why, the others go on
        batch.forEach((i, k) => {
          const failed: CellResult = { ...(cells[k] as CellId), status: 'failed', wallMs: 0, error: `could not start: ${String(e)}` };
          runs[i]?.push(failed);
          console.log(headline(failed));
        });
        continue;
      }
      const timeoutMs = cells.reduce((sum, c) => sum + profile.cellTimeoutMs[c.workload], 0);
      const measured = await runCells(specs, timeoutMs);
      measured.forEach((result, k) => {
        // An etcd or ZooKeeper cell sends no Redis commands: the idle nodes' counters would only read as noise.
        if (result.mode === 'etcd3' || result.mode === 'zk3') delete result.commands;
        runs[batch[k] as number]?.push(result);
        console.log(headline(result));
      });
    }
  } finally {
    await stopServers(servers);
  }
  runs.forEach((ran, i) => {
    if (ran.length > 0) results[i] = medianRun(ran);
  });

  // The workloads that are scripts of their own, on servers of their own: after ours are stopped.
  const external: ExternalResult[] = [];
  for (const id of args.external) {
    if (stopping) throw new Error('stopped by a signal before every workload ran');
    const w = externalWorkload(id);
    console.log(`\n${w.title}: bench/${w.script}`);
    const r = await runExternal(w, args.profile, outDir !== undefined);
    external.push(r);
    console.log(r.status === 'ok' ? `${r.markdown ?? ''}\n(${(r.wallMs / 1000).toFixed(1)} s)` : `${id} ${r.status}: ${r.error ?? ''}`);
  }

  const cells = results.map((r, i) => r ?? { ...(plan.cells[i] as CellId), status: 'failed' as const, wallMs: 0, error: 'not run' });
  const report: RunReport = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    command: commandLine(argv),
    profile: args.profile,
    machine: machineInfo(redisVersion),
    versions: Object.fromEntries(
      [...new Set(['fencelock', 'ioredis', 'redis', ...LIBRARIES.filter((l) => args.libraries.includes(l.id)).map((l) => l.pkg)])].map(
        (pkg) => [pkg === 'redis' ? 'node-redis (redis)' : pkg, packageVersion(pkg)],
      ),
    ),
    fencelockCommit: fencelockCommit(),
    settings,
    cells,
    ...(external.length > 0 ? { external } : {}),
    totalMs: performance.now() - started,
  };
  const files = await writeOutputs(report, outDir);
  console.log(`\n${consoleSummary(report)}\n`);
  const failed = cells.filter((c) => c.status === 'failed').length + external.filter((e) => e.status === 'failed').length;
  console.log(
    `${cells.length} cells, ${failed} failed, ${Math.round(report.totalMs / 1000)} s. Wrote ${files.json}, ${files.page}, ${files.chart}`,
  );
}

/** The nodes a cell's library uses in its mode. */
async function targets(servers: Servers, mode: Mode): Promise<string[]> {
  const urls = servers.nodes.urls;
  switch (mode) {
    case 'single':
      return urls.slice(0, 1);
    case 'redlock3':
      return urls.slice(0, 3);
    case 'redlock5':
      return [...urls];
    case 'etcd3':
      return [(await (servers.etcd ?? Promise.reject(new Error('etcd was not started')))).url];
    case 'zk3':
      return [(await (servers.zookeeper ?? Promise.reject(new Error('ZooKeeper was not started')))).url];
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
