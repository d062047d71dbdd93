// What an acquire + release allocates, and where (docs/benchmarks.md, "Where the time goes"): V8's sampling
// heap profiler with the objects that the garbage collector already took counted too, over N pairs after
// 3,000 warm-up pairs, on fresh local nodes; each caller loops on a key of its own (the design table's shape).
// Every sample is charged to the innermost fencelock frame on its stack (the allocating frame in brackets).
// `--floor` runs the raw floor instead (SET NX PX on every node, then a compare-and-delete script).
//
//   npm run build
//   node --import tsx bench/alloc-per-pair.ts [--nodes 3] [--callers 50] [--floor] [--top 40]
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { Redis } from 'ioredis';
import { startRedisNodes } from '../src/testing/index.js';

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback);
const NODES = option('--nodes', 1);
const CALLERS = option('--callers', 1);
const TOP = option('--top', 30);
const PAIRS = 5_000;
const FLOOR = argv.includes('--floor');
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
}

// The built package, as users get it (a variable: the type checker resolves the source's types instead).
const entry: string = '../dist/esm/index.js';
const { LockManager } = (await import(entry)) as typeof import('../src/index.js');
const nodes = await startRedisNodes(NODES);
const clients = nodes.urls.map((url) => new Redis(url));
const locks = new LockManager(clients, { ttl: 10_000 });
const releaseSha = String((await Promise.all(clients.map((c) => c.script('LOAD', RELEASE))))[0]);

async function floorPair(key: string): Promise<void> {
  const token = randomBytes(16).toString('hex');
  await Promise.all(clients.map((c) => c.set(key, token, 'PX', 10_000, 'NX')));
  await Promise.all(clients.map((c) => c.evalsha(releaseSha, 1, key, token)));
}

async function run(prefix: string, pairs: number): Promise<void> {
  let next = 0;
  const caller = async (c: number): Promise<void> => {
    for (; next < pairs; next++) {
      if (FLOOR) await floorPair(`${prefix}:c${c}`);
      else await (await locks.acquire(`${prefix}:c${c}`)).release();
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, (_, c) => caller(c)));
}

/** Bytes per pair by (innermost fencelock frame, allocating frame). */
function charge(head: SampleNode): { total: number; bySite: Map<string, number> } {
  const bySite = new Map<string, number>();
  let total = 0;
  const where = ({ functionName, url, lineNumber }: SampleNode['callFrame']): string =>
    `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(src|dist)\//, '$1/')}:${lineNumber + 1}`;
  const walk = (node: SampleNode, fencelockFrame: string): void => {
    const here = where(node.callFrame);
    const inner = node.callFrame.url.includes('/dist/esm/') ? here : fencelockFrame;
    total += node.selfSize;
    if (node.selfSize > 0) bySite.set(`${inner}  [${here}]`, (bySite.get(`${inner}  [${here}]`) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, inner);
  };
  walk(head, '(not under fencelock)');
  return { total, bySite };
}

try {
  await run('warm-up', 3_000);
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as unknown as Parameters<Session['post']>[1]);
  await run('measured', PAIRS);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: SampleNode } };
  session.disconnect();
  const { total, bySite } = charge(profile.head);
  console.log(
    `${FLOOR ? 'raw floor' : 'fencelock'}, ${NODES} node(s), ${CALLERS} caller(s): ${(total / PAIRS).toFixed(0)} B allocated per pair (sampled)`,
  );
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`${(bytes / PAIRS).toFixed(0).padStart(7)} B  ${site}`);
} finally {
  await locks.close();
  for (const c of clients) c.disconnect();
  await nodes.stop();
}
