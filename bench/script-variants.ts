// Redis CPU, client CPU and wall time per acquire+release for leaner variants of fencelock's scripts, against
// the raw floor and today's scripts (docs/benchmarks.md, "What limits W1"). One local node, fresh keys:
//   PAIRS=8000 taskset -c 1 node --import tsx bench/script-variants.ts
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { startRedisNode } from '../src/testing/index.js';
const node = await startRedisNode();
const c = new Redis(node.url);
const admin = new Redis(node.url);
const { acquireLua, releaseLua } = (await import('../src/redis/scripts/lua.generated.js' as string)) as { acquireLua: string; releaseLua: string };
const load = async (s: string) => String(await admin.script('LOAD', s));
const acquireSha = await load(acquireLua),
  releaseSha = await load(releaseLua);
const cadSha = await load("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end");
const relExSha = await load(
  "if redis.call('get', KEYS[1]) == ARGV[1] then if redis.call('exists', string.sub(KEYS[1],1,-6)..':queue') == 0 then return redis.call('del', KEYS[1]) end return 2 else return 0 end",
);
const min4Sha = await load(`local b = string.sub(KEYS[1],1,-6)
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
 if redis.call('EXISTS', b..':queue', b..':fence') == 0 then
  local f = redis.call('HINCRBY', KEYS[2], 'fence', 1)
  local m = redis.call('HMGET', KEYS[2], 'epoch', 'trusted', 'ttl')
  return '1 '..f..' '..m[1]..' '..m[2]..' '..m[3]
 end end return '0'`);
const min3Sha = await load(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local f = redis.call('HINCRBY', KEYS[2], 'fence', 1)
  local m = redis.call('HMGET', KEYS[2], 'epoch', 'trusted', 'ttl')
  return '1 '..f..' '..m[1]..' '..m[2]..' '..m[3]
 end return '0'`);
const set1Sha = await load(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`);
const marker = 'fencelock:{node}:epoch';
const N = Number(process.env.PAIRS ?? 10000);
async function cpu(): Promise<number> {
  const i = String(await admin.info('cpu'));
  const u = Number(/used_cpu_user:([\d.]+)/.exec(i)![1]);
  const s = Number(/used_cpu_sys:([\d.]+)/.exec(i)![1]);
  return (u + s) * 1e6;
}
const acq = (sha: string) => async (lock: string, t: string) => {
  await c.evalsha(sha, 2, lock, marker, t, '10000');
};
const variants: Record<string, [(l: string, t: string) => Promise<void>, string]> = {
  floor: [
    async (l, t) => {
      await c.set(l, t, 'PX', 10000, 'NX');
    },
    cadSha,
  ],
  scriptSET_cad: [acq(set1Sha), cadSha],
  current: [
    async (l, t) => {
      await c.evalsha(acquireSha, 2, l, marker, t, '10000', '1', 'abcdef0123456789', '123.4', '1000', '1', '0', '');
    },
    releaseSha,
  ],
  current_relEx: [
    async (l, t) => {
      await c.evalsha(acquireSha, 2, l, marker, t, '10000', '1', 'abcdef0123456789', '123.4', '1000', '1', '0', '');
    },
    relExSha,
  ],
  min4_relEx: [acq(min4Sha), relExSha],
  min3_relEx: [acq(min3Sha), relExSha],
  min3_cad: [acq(min3Sha), cadSha],
};
await admin.hset(marker, 'epoch', 'abcdef0123456789', 'born', '1', 'trusted', '1', 'ttl', '10000', 'v', '2');
for (let round = 0; round < 2; round++)
  for (const [name, [a, rel]] of Object.entries(variants)) {
    const f = async (k: string) => {
      const t = randomBytes(18).toString('base64url');
      const l = `fencelock:{${k}}:lock`;
      await a(l, t);
      await c.evalsha(rel, 1, l, t);
    };
    for (let i = 0; i < 500; i++) await f(`w${name}${round}:${i}`);
    const c0 = await cpu();
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await f(`${name}${round}:${i}`);
    const wall = ((performance.now() - t0) * 1000) / N;
    const u = process.cpuUsage(u0);
    const r = ((await cpu()) - c0) / N;
    if (round)
      console.log(
        `${name.padEnd(16)} wall ${wall.toFixed(1)} client ${((u.user + u.system) / N).toFixed(1)} redis ${r.toFixed(1)} µs/pair`,
      );
  }
c.disconnect();
admin.disconnect();
await node.stop();
