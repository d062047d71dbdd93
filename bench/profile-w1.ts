// Where fencelock's time goes per acquire + release (docs/benchmarks.md, "Where the time goes").
// One caller, one local node, sequential pairs on fresh keys, against the built package:
//
//   npm run build
//   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-w1.ts
//
// Prints wall time and client CPU per pair, and the Redis CPU per script call from INFO commandstats;
// open the .cpuprofile in Chrome DevTools (or any cpuprofile viewer) for the client-side split.
import { Redis } from 'ioredis';
import type { LockManager as Manager } from '../src/index.js';
import { startRedisNode } from '../src/testing/index.js';

const { LockManager } = (await import('../dist/esm/index.js' as string)) as typeof import('../src/index.js');
const PAIRS = 20_000;

const node = await startRedisNode();
const client = new Redis(node.url);
const admin = new Redis(node.url);
const locks: Manager = new LockManager([client], { ttl: 10_000 });
try {
  for (let i = 0; i < 3_000; i++) await (await locks.acquire(`warmup:${i}`)).release();
  await admin.config('RESETSTAT');
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < PAIRS; i++) await (await locks.acquire(`pair:${i}`)).release();
  const wallUs = ((performance.now() - started) * 1000) / PAIRS;
  const used = process.cpuUsage(cpu);
  const stats = await admin.info('commandstats');
  const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
  console.log(`wall ${wallUs.toFixed(1)} µs/pair, client CPU ${((used.user + used.system) / PAIRS).toFixed(1)} µs/pair`);
  if (evalsha) console.log(`Redis: ${evalsha[1]} script calls, ${(Number(evalsha[2]) / Number(evalsha[1])).toFixed(1)} µs each on average`);
} finally {
  await locks.close();
  client.disconnect();
  admin.disconnect();
  await node.stop();
}
