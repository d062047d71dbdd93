// The acquire as one MULTI/EXEC (ioredis multi(), or the commands sent one by one) against the script and
// the raw floor (docs/benchmarks.md, "What limits W1": tried and dropped). One local node, fresh keys:
//   PAIRS=8000 taskset -c 1 node --import tsx bench/multi-variant.ts
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { startRedisNode } from '../src/testing/index.js';
const node = await startRedisNode();
const c = new Redis(node.url);
const admin = new Redis(node.url);
const { acquireLua, releaseLua } = (await import('../src/redis/scripts/lua.generated.js' as string)) as { acquireLua: string; releaseLua: string };
const acquireSha = String(await admin.script('LOAD', acquireLua));
const releaseSha = String(await admin.script('LOAD', releaseLua));
const CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const cadSha = String(await admin.script('LOAD', CAD));
const CHEAP_REL =
  "if redis.call('get', KEYS[1]) == ARGV[1] then if redis.call('exists', string.sub(KEYS[1],1,-6)..':queue') == 0 then return redis.call('del', KEYS[1]) end return 2 else return 0 end";
const cheapRelSha = String(await admin.script('LOAD', CHEAP_REL));
const marker = 'fencelock:{node}:epoch';
const N = Number(process.env.PAIRS ?? 10000);
async function cpu(): Promise<number> {
  const i = String(await admin.info('cpu'));
  const u = Number(/used_cpu_user:([\d.]+)/.exec(i)![1]);
  const s = Number(/used_cpu_sys:([\d.]+)/.exec(i)![1]);
  return (u + s) * 1e6;
}
const variants: Record<string, (k: string) => Promise<void>> = {
  floor: async (k) => {
    const t = randomBytes(16).toString('hex');
    await c.set(k, t, 'PX', 10000, 'NX');
    await c.evalsha(cadSha, 1, k, t);
  },
  script: async (k) => {
    const t = randomBytes(18).toString('base64url');
    const lock = `fencelock:{${k}}:lock`;
    await c.evalsha(acquireSha, 2, lock, marker, t, '10000', '1', 'abcdef0123456789', '123.4', '1000', '1', '0', '');
    await c.evalsha(releaseSha, 1, lock, t);
  },
  multiApi: async (k) => {
    const t = randomBytes(18).toString('base64url');
    const lock = `fencelock:{${k}}:lock`;
    const base = `fencelock:{${k}}`;
    await c
      .multi()
      .set(lock, t, 'PX', 10000, 'NX')
      .exists(base + ':queue', base + ':fence')
      .hincrby(marker, 'fence', 1)
      .hmget(marker, 'epoch', 'born', 'trusted', 'ttl')
      .exec();
    await c.evalsha(cheapRelSha, 1, lock, t);
  },
  multiRaw: async (k) => {
    const t = randomBytes(18).toString('base64url');
    const lock = `fencelock:{${k}}:lock`;
    const base = `fencelock:{${k}}`;
    c.call('MULTI');
    c.call('SET', lock, t, 'PX', '10000', 'NX');
    c.call('EXISTS', base + ':queue', base + ':fence');
    c.call('HINCRBY', marker, 'fence', '1');
    c.call('HMGET', marker, 'epoch', 'born', 'trusted', 'ttl');
    await c.call('EXEC');
    await c.evalsha(cheapRelSha, 1, lock, t);
  },
  multiRawCheapRel: async (k) => {
    const t = randomBytes(18).toString('base64url');
    const lock = `fencelock:{${k}}:lock`;
    const base = `fencelock:{${k}}`;
    c.call('MULTI');
    c.call('SET', lock, t, 'PX', '10000', 'NX');
    c.call('EXISTS', base + ':queue', base + ':fence');
    c.call('HINCRBY', marker, 'fence', '1');
    c.call('HMGET', marker, 'epoch', 'born', 'trusted', 'ttl');
    await c.call('EXEC');
    await c.evalsha(cadSha, 1, lock, t);
  },
};
await admin.hset(marker, 'epoch', 'abcdef0123456789', 'born', '1', 'trusted', '1', 'ttl', '10000', 'v', '2');
for (let round = 0; round < 2; round++)
  for (const [name, f] of Object.entries(variants)) {
    for (let i = 0; i < 500; i++) await f(`w${name}${round}:${i}`);
    const c0 = await cpu();
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await f(`${name}${round}:${i}`);
    const wall = ((performance.now() - t0) * 1000) / N;
    const u = process.cpuUsage(u0);
    const r = ((await cpu()) - c0) / N;
    console.log(`${name.padEnd(18)} wall ${wall.toFixed(1)} client ${((u.user + u.system) / N).toFixed(1)} redis ${r.toFixed(1)} µs/pair`);
  }
c.disconnect();
admin.disconnect();
await node.stop();
