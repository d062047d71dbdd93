// `npm run bench`: starts five redis-server nodes (and a 3-member etcd cluster and a 3-server ZooKeeper ensemble),
// runs every (workload, library, mode) cell in a fresh process on them, and writes the JSON, the docs page and the
// chart. See docs/benchmarks.md and `--help`.
import {
  startEtcdCluster,
  startRedisNodes,
  startZooKeeperEnsemble,
  type LocalEtcdCluster,
  type LocalZooKeeperEnsemble,
} from '../src/testing/index.js';
import { parseArgs } from './args.js';
import { previousEntry } from './previous.js';
import { commonSettings, ETCD_MEMBERS, MODE_LABEL, NODE_COUNT, PROFILES, ZOOKEEPER_CONFIG, ZOOKEEPER_SERVERS } from './config.js';
import { LIBRARIES, libraryEntry, notApplicable } from './libraries/index.js';
import { fencelockCommit, machineInfo, packageVersion } from './machine.js';
import { RedisAdmin } from './redis-admin.js';
import { firstLine, num } from './report/format.js';
import { workloadTable } from './report/markdown.js';
import { writeOutputs } from './report/write.js';
import { killCurrentCell, runCell } from './spawn-cell.js';
import type { CellResult, CellSpec, RunReport } from './types.js';

const HEADLINE: Record<string, Array<[string, string]>> = {
  W1: [
    ['pairP50Ms', 'p50 ms'],
    ['pairP99Ms', 'p99 ms'],
  ],
  W2: [['pairsPerSec', 'pairs/s']],
  W3: [
    ['acqPerSec', 'acq/s'],
    ['waitP99Ms', 'wait p99 ms'],
    ['jain', 'Jain'],
  ],
  W4: [
    ['acqPerSec', 'acq/s'],
    ['waitP99Ms', 'wait p99 ms'],
    ['jain', 'Jain'],
  ],
  W5: [
    ['heapBytesPerLock', 'heap B/lock'],
    ['eventLoopDelayP99Ms', 'ELD p99 ms'],
  ],
};

function headline(c: CellResult): string {
  const where = `${c.workload} ${MODE_LABEL[c.mode].padEnd(17)} ${c.library.padEnd(24)}`;
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

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const args = parseArgs(argv);
  const profile = PROFILES[args.profile];
  const started = performance.now();
  const startedAt = new Date();
  const libs = args.libraries.map(libraryEntry);
  const settings: RunReport['settings'] = {
    common: commonSettings(),
    workloads: { profile: args.profile, W1: profile.w1, W2: profile.w2, W3: profile.w3, W4: profile.w4, W5: profile.w5 },
    libraries: Object.fromEntries(await Promise.all(libs.map(async (l) => [l.id, (await l.load()).settings] as const))),
  };
  console.log(
    `fencelock benchmark, ${args.profile} profile: ${args.workloads.join(' ')} x ${libs.length} libraries x ${args.modes.length} modes`,
  );
  console.log(JSON.stringify(settings, null, 2));

  // Built before any cell starts, so that cells do not race to build it. Without git history (a shallow
  // clone, a tarball) there is nothing to build: the run goes on without it and says why.
  if (args.libraries.includes('fencelock/ioredis@previous')) {
    try {
      console.log(`previous release: ${previousEntry()}`);
    } catch (error) {
      console.log(`previous release left out: ${firstLine(String(error), 200)}`);
      args.libraries = args.libraries.filter((id) => id !== 'fencelock/ioredis@previous');
      libs.splice(
        libs.findIndex((l) => l.id === 'fencelock/ioredis@previous'),
        1,
      );
    }
  }
  // until our handlers are installed, a Ctrl-C is handled by fencelock/testing, which kills the nodes itself
  const nodes = await startRedisNodes(NODE_COUNT);
  let etcd: LocalEtcdCluster | undefined;
  let zookeeper: LocalZooKeeperEnsemble | undefined;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${signal}: stopping the running cell, the Redis nodes, etcd and ZooKeeper`);
    killCurrentCell();
    void Promise.all([nodes.stop(), etcd?.stop(), zookeeper?.stop()]).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killCurrentCell);

  const cells: CellResult[] = [];
  let redisVersion = 'unknown';
  const urls = nodes.urls;
  const admin = await RedisAdmin.connect(urls);
  try {
    redisVersion = await admin.redisVersion();
    // The etcd and ZooKeeper cells' clusters: each started once, like the Redis nodes (their data grows with the
    // run: fine), and only when some cell runs on it.
    const consensus = libs.some((l) => l.consensus);
    if (args.modes.includes('etcd3') && consensus) etcd = await startEtcdCluster({ members: ETCD_MEMBERS });
    if (args.modes.includes('zk3') && consensus)
      zookeeper = await startZooKeeperEnsemble({ servers: ZOOKEEPER_SERVERS, config: ZOOKEEPER_CONFIG });
    for (const workload of args.workloads) {
      for (const mode of args.modes) {
        for (const lib of libs) {
          // Stopped by a signal: no report of a partial run (and no exit code 0 for it).
          if (stopping) throw new Error('stopped by a signal before every cell ran');
          const base = { workload, library: lib.id, mode } as const;
          let result: CellResult;
          const skip = notApplicable(lib, workload, mode);
          if (skip) {
            result = { ...base, status: 'n/a', wallMs: 0, error: skip };
          } else {
            const target: Record<typeof mode, string[]> = {
              single: urls.slice(0, 1),
              redlock5: urls,
              etcd3: [etcd?.url as string],
              zk3: [zookeeper?.url as string],
            };
            const spec: CellSpec = { ...base, urls: target[mode], statsUrls: urls, profile: args.profile };
            try {
              await admin.reset();
              result = await runCell(spec, profile.cellTimeoutMs[workload]);
              // An etcd or ZooKeeper cell sends no Redis commands: the idle nodes' counters would only read as noise.
              if (mode === 'etcd3' || mode === 'zk3') delete result.commands;
            } catch (e) {
              result = { ...base, status: 'failed', wallMs: 0, error: `could not reset the nodes: ${String(e)}` };
            }
          }
          cells.push(result);
          console.log(headline(result));
        }
      }
    }
  } finally {
    await admin.close();
    await nodes.stop();
    await etcd?.stop();
    await zookeeper?.stop();
  }

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
    totalMs: performance.now() - started,
  };
  const files = await writeOutputs(report, args.outDir);
  console.log(`\n${args.workloads.map((w) => workloadTable(report, w)).join('\n\n')}\n`);
  const failed = cells.filter((c) => c.status === 'failed').length;
  console.log(
    `${cells.length} cells, ${failed} failed, ${Math.round(report.totalMs / 1000)} s. Wrote ${files.json}, ${files.page}, ${files.chart}`,
  );
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
