// Diagnostic only: how many distinct fencelock functions one uncontended acquire + release runs, and how many calls,
// from V8's precise coverage (call counts) over 100 pairs after 50 warm-up pairs, over stand-ins for ioredis clients
// (stand-in.ts). A fresh process runs each of these functions unoptimised, and V8 compiles each on its own once it
// has run long enough, so their number is what a short-lived process pays for (docs/benchmarks.md, "A lone
// caller's request written at once, and the cold window"). `--list` prints every function with its calls per pair.
// `--handover` counts a same-process hand-over instead (W3's): two callers of one process take turns on one key,
// each holding 1 ms, on real redis-server nodes started for the run (a stand-in hands nothing over), so that each
// release grants the lock to the other caller, parked behind it; the counts are per release + the acquire it ends.
//
//   npm run build && node --import tsx bench/functions-per-pair.ts [--nodes N] [--handover] [--list]
import { Session } from 'node:inspector/promises';
import type { LockManager as Manager } from '../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../src/testing/index.js';
import { numberOption } from './diagnostic-args.js';
import { standIn } from './stand-in.js';

const argv = process.argv.slice(2);
const NODES = numberOption(argv, '--nodes', 1);
const HANDOVER = argv.includes('--handover');
const PAIRS = 100;
/** The built package, as users get it (a non-literal specifier: its types are src/'s). */
const entry: string = '../dist/esm/index.js';
const { LockManager } = (await import(entry)) as typeof import('../src/index.js');
const servers: LocalRedisNodes | undefined = HANDOVER ? await startRedisNodes(NODES) : undefined;
const locks: Manager = new LockManager(
  servers ? servers.nodes.map((n) => n.url) : Array.from({ length: NODES }, (_, i) => standIn(i + 1)),
  { ttl: 10_000 },
);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const pairs = async (prefix: string, n: number): Promise<void> => {
  if (!HANDOVER) {
    for (let i = 0; i < n; i++) await (await locks.acquire(`${prefix}:${i}`)).release();
    return;
  }
  const turns = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const lock = await locks.acquire(prefix, { timeout: 10_000 });
      await sleep(1);
      await lock.release();
    }
  };
  await Promise.all([turns(n / 2), turns(n / 2)]);
};
await pairs('warm-up', 50);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
await session.post('Profiler.takePreciseCoverage'); // resets the counts
await pairs('counted', PAIRS);
const { result } = await session.post('Profiler.takePreciseCoverage');
await session.post('Profiler.stopPreciseCoverage');
session.disconnect();
await locks.close();
await servers?.stop();

const ours: Array<[string, number]> = [];
for (const script of result) {
  const file = /\/dist\/esm\/(.*)$/.exec(script.url)?.[1];
  if (!file) continue;
  for (const fn of script.functions) {
    const range = fn.ranges[0];
    if (!range || range.count === 0) continue;
    ours.push([`${file} ${fn.functionName || `(anonymous at offset ${range.startOffset})`}`, range.count / PAIRS]);
  }
}
ours.sort((a, b) => b[1] - a[1]);
const files = new Set(ours.map(([name]) => name.split(' ')[0]));
const calls = ours.reduce((sum, [, n]) => sum + n, 0);
console.log(
  `${NODES} node(s): one ${HANDOVER ? 'same-process hand-over (a release and the acquire it ends)' : 'acquire + release'} runs ${ours.length} distinct fencelock functions in ${files.size} files, ${calls.toFixed(0)} calls`,
);
if (argv.includes('--list')) for (const [name, n] of ours) console.log(`${n.toFixed(2).padStart(7)}  ${name}`);
