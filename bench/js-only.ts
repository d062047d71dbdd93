// Diagnostic only, not a benchmark: fencelock's own JavaScript per acquire + release, over stand-ins for ioredis
// clients that answer at once from memory (no network, no Redis, nothing checked). On a shared machine the wall
// and CPU figures of real pairs swing by more than the JavaScript costs; this isolates it (docs/benchmarks.md,
// "The uncontended path's JavaScript" and "A lone caller's request written at once"). `dir`: a tree with a build
// (default: this one). `--nodes N` (default 1): N stand-ins, each with a fence counter of its own, so that their
// grants agree as real nodes' do.
//
// The process's first pairs are printed as a curve (client CPU per pair in blocks: the first 200 pairs, as W1's
// warm-up, then blocks of 2,000): a fresh process runs fencelock's functions unoptimised until V8 has seen each
// one run long enough, and W1's timed pairs (the 2,000 after its warm-up) fall in that window. Then the warm
// figure: the median of 5 chunks of `pairs` / 5 after them.
//
//   npm run build && node --import tsx bench/js-only.ts [dir] [pairs] [--nodes N]
import { resolve } from 'node:path';
import { numberOption, positionals } from './diagnostic-args.js';
import { standIn } from './stand-in.js';

const argv = process.argv.slice(2);
const NODES = numberOption(argv, '--nodes', 1);
// The tree and the pair count.
const positional = positionals(argv, ['--nodes']);
// A relative tree is the caller's (the current directory's), not this file's.
const dir = positional[0] === undefined ? new URL('..', import.meta.url).pathname : resolve(positional[0]);
const PAIRS = Number(positional[1] ?? 200_000);
const { LockManager } = (await import(`${dir}/dist/esm/index.js`)) as typeof import('../src/index.js');

const locks = new LockManager(
  Array.from({ length: NODES }, (_, i) => standIn(i + 1)),
  { ttl: 10_000 },
);
let next = 0;
/** Client CPU per pair, µs, over `n` pairs on fresh keys. */
async function run(n: number): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await (await locks.acquire(`js-only:${next++}`)).release();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}
const curve: string[] = [];
for (const [from, n] of [
  [0, 200],
  [200, 2_000],
  [2_200, 2_000],
  [4_200, 2_000],
  [6_200, 2_000],
] as const)
  curve.push(`pairs ${from}-${from + n}: ${(await run(n)).toFixed(1)}`);
await run(20_000);
const results: number[] = [];
for (let r = 0; r < 5; r++) results.push(await run(PAIRS / 5));
results.sort((a, b) => a - b);
console.log(`${dir}, ${NODES} node(s): a fresh process, client CPU µs per pair: ${curve.join(', ')}`);
console.log(`  warm (after 28,200 pairs): JS only ${results[2]!.toFixed(2)} µs/pair (median of 5; min ${results[0]!.toFixed(2)})`);
await locks.close();
