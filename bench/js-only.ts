// Diagnostic only, not a benchmark: fencelock's own JavaScript per acquire + release, over a stand-in for an
// ioredis client that answers at once from memory (no network, no Redis, nothing checked). On a shared machine the
// wall and CPU figures of real pairs swing by more than the JavaScript costs; this isolates it (docs/benchmarks.md,
// "The uncontended path's JavaScript"). `dir`: a tree with a build (default: this one).
//
//   npm run build && node --import tsx bench/js-only.ts [dir] [pairs]
const dir = process.argv[2] ?? new URL('..', import.meta.url).pathname;
const PAIRS = Number(process.argv[3] ?? 200_000);
const { LockManager } = (await import(`${dir}/dist/esm/index.js`)) as typeof import('../src/index.js');
let fence = 0;
const fake = {
  status: 'ready',
  options: { host: 'fake', port: 1 },
  call(command: string, ...args: string[]): Promise<unknown> {
    // acquire: EVAL/EVALSHA with 2+ keys and ttl; release: 1 key
    if (args[1] !== '1') return Promise.resolve(`1 ${++fence} epochABCDEF 0 1 10000`);
    return Promise.resolve(1);
  },
  duplicate() {
    return fake;
  },
  connect: async () => undefined,
  subscribe: async () => undefined,
  unsubscribe: async () => undefined,
  quit: async () => undefined,
  disconnect() {},
  on() {
    return fake;
  },
  once() {
    return fake;
  },
  removeListener() {
    return fake;
  },
};
const locks = new LockManager([fake], { ttl: 10_000 });
async function run(n: number, prefix: string): Promise<void> {
  for (let i = 0; i < n; i++) await (await locks.acquire(`${prefix}:${i}`)).release();
}
await run(20_000, 'warm');
const results: number[] = [];
for (let r = 0; r < 5; r++) {
  const c0 = process.cpuUsage();
  await run(PAIRS / 5, `r${r}`);
  const c = process.cpuUsage(c0);
  results.push((c.user + c.system) / (PAIRS / 5));
}
results.sort((a, b) => a - b);
console.log(`${dir}: JS only ${results[2]!.toFixed(2)} µs/pair (median of 5; min ${results[0]!.toFixed(2)})`);
await locks.close();
