// The burst workload (issue 25): N callers fire acquire(key, { timeout: 120 s }) + release() at once against
// healthy local Redis nodes, default options, ioredis; one key (a flash sale) or distinct keys. Every cell runs
// in fresh Node processes. Reported per cell: failures, seconds, acquisitions/s, the callers' processes' CPU
// time (user + system, summed: it varies less than seconds with other load on the machine), Redis CPU per
// acquisition (INFO cpu, summed over the nodes) and heap per acquire in flight (measured in the callers'
// process right after the burst was fired, after a full GC).
//
//   npm run bench:burst                        all cells, this tree's package as built (it builds dist/ first)
//   npm run bench:burst -- --only one-key-8192 --dist ../other/dist/esm
//
// fencelock is measured as users get it, the built package (dist/esm, plain tsc output), as the other workloads
// measure it. --dist: another build to load (a checkout's dist/esm, to measure before and after a change);
// --cpu-prof <dir>: a CPU profile of every child process into <dir> (node --cpu-prof; bench/profile-summary.ts reads it).
// --src: a checkout's TypeScript source instead, through tsx. tsx adds what users never run: it keeps function
// names with a defineProperty on every named closure, about 250 bytes each, so heap per acquire reads higher.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startRedisNodes } from '../src/testing/index.js';

type Library = 'fencelock' | 'redlock-v5' | 'raw-floor';

interface Cell {
  readonly id: string;
  readonly label: string;
  readonly nodes: 1 | 5;
  readonly processes: number;
  readonly callers: number;
  readonly distinct: boolean;
  readonly library: Library;
}

const cell = (id: string, label: string, nodes: 1 | 5, processes: number, callers: number, distinct: boolean, library: Library): Cell => ({
  id,
  label,
  nodes,
  processes,
  callers,
  distinct,
  library,
});

export const CELLS: readonly Cell[] = [
  cell('one-key-16', '1 node, one key, 16 callers', 1, 1, 16, false, 'fencelock'),
  cell('one-key-8192', '1 node, one key, 8,192 callers', 1, 1, 8192, false, 'fencelock'),
  cell('five-nodes-4096', '5 nodes, one key, 4,096 callers', 5, 1, 4096, false, 'fencelock'),
  cell('four-procs-2048', '1 node, one key, 4 processes × 2,048 callers', 1, 4, 2048, false, 'fencelock'),
  cell('distinct-16384', '1 node, distinct keys, 16,384 callers', 1, 1, 16384, true, 'fencelock'),
  cell('distinct-16384-redlock-v5', '1 node, distinct keys, 16,384 callers: node-redlock v5', 1, 1, 16384, true, 'redlock-v5'),
  cell(
    'distinct-16384-raw',
    '1 node, distinct keys, 16,384 callers: raw floor (SET NX PX, compare-and-delete)',
    1,
    1,
    16384,
    true,
    'raw-floor',
  ),
];

interface ChildArgs {
  readonly library: Library;
  /** the fencelock entry module to load: dist/esm/index.js, or a src/index.ts through tsx */
  readonly entry: string;
  readonly urls: string[];
  readonly callers: number;
  readonly distinct: boolean;
  readonly key: string;
}

interface ChildResult {
  readonly ok: number;
  readonly failed: number;
  readonly seconds: number;
  /** this process's CPU time (user + system) from the burst's start to its end, seconds */
  readonly cpuSeconds: number;
  readonly heapPerCaller: number;
  readonly firstError: string;
}

type Pair = { acquire(key: string): Promise<{ release(): Promise<unknown> }>; close(): Promise<void> };

async function openLibrary(args: ChildArgs): Promise<Pair> {
  const clients = args.urls.map((url) => new Redis(url, { lazyConnect: true }));
  await Promise.all(clients.map((c) => c.connect()));
  const closeClients = async (): Promise<void> => void (await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect()))));
  if (args.library === 'fencelock') {
    const mod = (await import(pathToFileURL(args.entry).href)) as typeof import('../src/index.js');
    const locks = new mod.LockManager(clients);
    return {
      acquire: (key) => locks.acquire(key, { timeout: 120_000 }),
      close: async () => {
        await locks.close();
        await closeClients();
      },
    };
  }
  if (args.library === 'redlock-v5') {
    const { default: Redlock } = await import('redlock-v5');
    const redlock = new Redlock(clients, { retryCount: 12_000, retryDelay: 10, retryJitter: 10 });
    redlock.on('error', () => undefined);
    return { acquire: (key) => redlock.acquire([key], 10_000), close: closeClients };
  }
  const [node] = clients as [Redis];
  const release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
  return {
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      for (let i = 0; i < 12_000; i++) {
        if ((await node.set(key, token, 'PX', 10_000, 'NX')) === 'OK') return { release: () => node.eval(release, 1, key, token) };
        await new Promise((r) => setTimeout(r, Math.random() * 10));
      }
      throw new Error(`raw floor: ${key} not acquired`);
    },
    close: closeClients,
  };
}

async function child(args: ChildArgs): Promise<void> {
  const lib = await openLibrary(args);
  // One warm-up pair: scripts loaded, connections up (not a JIT warm-up: the burst is the first real work).
  await (await lib.acquire(`${args.key}-warm`)).release();
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let ok = 0;
  let failed = 0;
  let firstError = '';
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const calls: Array<Promise<void>> = [];
  for (let i = 0; i < args.callers; i++) {
    const key = args.distinct ? `${args.key}-${i}` : args.key;
    calls.push(
      lib.acquire(key).then(
        async (lock) => {
          ok++;
          await lock.release();
        },
        (error: unknown) => {
          failed++;
          firstError ||= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        },
      ),
    );
  }
  // Every call is in flight now (none can have settled: that takes a round trip).
  gc?.();
  const heapPerCaller = (process.memoryUsage().heapUsed - heapBefore) / args.callers;
  await Promise.all(calls);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  await lib.close();
  const result: ChildResult = { ok, failed, seconds, cpuSeconds, heapPerCaller, firstError: firstError.slice(0, 200) };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

interface Spawned {
  readonly ready: Promise<void>;
  readonly result: Promise<ChildResult>;
  go(): void;
}

/** `node --cpu-prof` for every child, into this folder (--cpu-prof <dir>; summarise with bench/profile-summary.ts). */
let cpuProfDir: string | undefined;

function spawnChild(args: ChildArgs): Spawned {
  const self = fileURLToPath(import.meta.url);
  const profile = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [];
  const proc = spawn(process.execPath, [...profile, '--expose-gc', '--import', 'tsx', self, '--child', JSON.stringify(args)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  let readyResolve: () => void = () => undefined;
  const ready = new Promise<void>((r) => (readyResolve = r));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) readyResolve();
  });
  const result = new Promise<ChildResult>((resolve, reject) => {
    proc.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as ChildResult);
      else reject(new Error(`burst child exited with ${code} and no result`));
    });
  });
  return { ready, result, go: () => proc.stdin.end('go\n') };
}

async function redisCpu(admin: readonly Redis[]): Promise<number> {
  let total = 0;
  for (const a of admin) {
    const info = (await a.info('cpu')) as string;
    const field = (name: string): number =>
      Number(/^(\S+):(\S+)$/m.exec(info.split('\n').find((l) => l.startsWith(`${name}:`)) ?? '')?.[2] ?? 0);
    total += field('used_cpu_sys') + field('used_cpu_user');
  }
  return total;
}

interface Row {
  readonly cell: Cell;
  readonly ok: number;
  readonly failed: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly clientCpuSeconds: number;
  readonly cpuPerAcquireUs: number;
  readonly heapPerCaller: number;
  readonly firstError: string;
}

async function runCell(c: Cell, entry: string): Promise<Row> {
  const nodes = await startRedisNodes(c.nodes);
  const admin = nodes.urls.map((url) => new Redis(url));
  try {
    const key = `burst-${randomBytes(4).toString('hex')}`;
    const children = Array.from({ length: c.processes }, () =>
      spawnChild({ library: c.library, entry, urls: [...nodes.urls], callers: c.callers, distinct: c.distinct, key }),
    );
    await Promise.all(children.map((ch) => ch.ready));
    const cpuBefore = await redisCpu(admin);
    const started = performance.now();
    for (const ch of children) ch.go();
    const results = await Promise.all(children.map((ch) => ch.result));
    const seconds = (performance.now() - started) / 1000;
    const cpu = (await redisCpu(admin)) - cpuBefore;
    const ok = results.reduce((s, r) => s + r.ok, 0);
    const failed = results.reduce((s, r) => s + r.failed, 0);
    return {
      cell: c,
      ok,
      failed,
      seconds,
      perSecond: ok / seconds,
      clientCpuSeconds: results.reduce((s, r) => s + r.cpuSeconds, 0),
      cpuPerAcquireUs: ok > 0 ? (cpu * 1e6) / ok : NaN,
      heapPerCaller: Math.max(...results.map((r) => r.heapPerCaller)),
      firstError: results.map((r) => r.firstError).find((e) => e) ?? '',
    };
  } finally {
    for (const a of admin) a.disconnect();
    await nodes.stop();
  }
}

function table(rows: readonly Row[]): string {
  const lines = [
    '| burst | failures | seconds | acq/s | client CPU s | Redis CPU µs/acq | heap B/acquire in flight |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...rows.map(
      (r) =>
        `| ${r.cell.label} | ${r.failed} of ${r.cell.callers * r.cell.processes} | ${r.seconds.toFixed(2)} | ${Math.round(r.perSecond).toLocaleString('en')} | ${r.clientCpuSeconds.toFixed(2)} | ${r.cpuPerAcquireUs.toFixed(1)} | ${Math.round(r.heapPerCaller).toLocaleString('en')} |`,
    ),
  ];
  const errors = rows.filter((r) => r.firstError).map((r) => `- ${r.cell.label}: first error: ${r.firstError}`);
  return [...lines, ...(errors.length > 0 ? ['', ...errors] : [])].join('\n');
}

/** The fencelock module the cells load: --src <dir> (its index.ts), --dist <dir> (its index.js), else this tree's dist/esm. */
function fencelockEntry(argv: readonly string[]): string {
  const option = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at >= 0 ? path.resolve(argv[at + 1] as string) : undefined;
  };
  const src = option('--src');
  if (src) return path.join(src, 'index.ts');
  const dist = option('--dist') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../dist/esm');
  return path.join(dist, 'index.js');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const childAt = argv.indexOf('--child');
  if (childAt >= 0) return child(JSON.parse(argv[childAt + 1] as string) as ChildArgs);
  const entry = fencelockEntry(argv);
  const profAt = argv.indexOf('--cpu-prof');
  if (profAt >= 0) cpuProfDir = path.resolve(argv[profAt + 1] as string);
  if (!existsSync(entry)) throw new Error(`${entry} not found: build it first (npm run bench:burst builds this tree's dist/)`);
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt >= 0 ? (argv[onlyAt + 1] as string).split(',') : undefined;
  const rows: Row[] = [];
  for (const c of CELLS.filter((c) => !only || only.includes(c.id))) {
    const row = await runCell(c, entry);
    rows.push(row);
    // Each row as it completes: a run cut short still leaves its finished cells.
    console.error(table([row]).split('\n').slice(2).join('\n'));
  }
  console.error(`fencelock from ${entry}`); // stderr: stdout is the markdown that goes on docs/benchmarks.md (bench/external.ts)
  console.log(table(rows));
}

await main();
