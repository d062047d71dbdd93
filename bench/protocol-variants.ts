// Leaner forms of fencelock's acquire + release, sent straight with ioredis against one local node, beside the
// raw floor and fencelock's own scripts (docs/benchmarks.md, "What limits W1"): wall time, client CPU and
// Redis CPU per pair on fresh keys, two rounds (the second is the one to read), every variant in each round.
//
//   PAIRS=8000 taskset -c 1 node --import tsx bench/protocol-variants.ts
//
// Variants: the raw floor; a script doing only SET NX PX (what the script wrapper costs); fencelock's scripts
// (current); its acquire with a release that reads no queue (relEx: GET, EXISTS, DEL); the leanest acquire that
// keeps the fence, the node state and the queue check (min4), and one without the queue check (min3); the
// acquire as one MULTI/EXEC through ioredis' multi() (multiApi) or as its commands sent one by one (multiRaw).
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { startRedisNode } from '../src/testing/index.js';

const node = await startRedisNode();
const c = new Redis(node.url);
const admin = new Redis(node.url);
const { acquireLua, releaseLua } = (await import('../src/redis/scripts/lua.generated.js' as string)) as {
  acquireLua: string;
  releaseLua: string;
};
const load = async (source: string): Promise<string> => String(await admin.script('LOAD', source));
const MARKER = 'fencelock:{node}:epoch';
const PAIRS = Number(process.env.PAIRS ?? 10_000);

const sha = {
  acquire: await load(acquireLua),
  release: await load(releaseLua),
  cad: await load("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"),
  relEx: await load(
    "if redis.call('get', KEYS[1]) == ARGV[1] then if redis.call('exists', string.sub(KEYS[1],1,-6)..':queue') == 0 then return redis.call('del', KEYS[1]) end return 2 else return 0 end",
  ),
  min4: await load(`local b = string.sub(KEYS[1],1,-6)
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
 if redis.call('EXISTS', b..':queue', b..':fence') == 0 then
  local f = redis.call('HINCRBY', KEYS[2], 'fence', 1)
  local m = redis.call('HMGET', KEYS[2], 'epoch', 'trusted', 'ttl')
  return '1 '..f..' '..m[1]..' '..m[2]..' '..m[3]
 end end return '0'`),
  min3: await load(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local f = redis.call('HINCRBY', KEYS[2], 'fence', 1)
  local m = redis.call('HMGET', KEYS[2], 'epoch', 'trusted', 'ttl')
  return '1 '..f..' '..m[1]..' '..m[2]..' '..m[3]
 end return '0'`),
  setOnly: await load(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`),
};

type Acquire = (lock: string, token: string) => Promise<unknown>;
const script =
  (s: string): Acquire =>
  (lock, token) =>
    c.evalsha(s, 2, lock, MARKER, token, '10000');
const fencelockAcquire: Acquire = (lock, token) => c.evalsha(sha.acquire, 2, lock, MARKER, token, '10000');
const base = (lock: string): string => lock.slice(0, -':lock'.length);
const multiApi: Acquire = (lock, token) =>
  c
    .multi()
    .set(lock, token, 'PX', 10_000, 'NX')
    .exists(`${base(lock)}:queue`, `${base(lock)}:fence`)
    .hincrby(MARKER, 'fence', 1)
    .hmget(MARKER, 'epoch', 'born', 'trusted', 'ttl')
    .exec();
const multiRaw: Acquire = (lock, token) => {
  void c.call('MULTI');
  void c.call('SET', lock, token, 'PX', '10000', 'NX');
  void c.call('EXISTS', `${base(lock)}:queue`, `${base(lock)}:fence`);
  void c.call('HINCRBY', MARKER, 'fence', '1');
  void c.call('HMGET', MARKER, 'epoch', 'born', 'trusted', 'ttl');
  return c.call('EXEC');
};

/** name → [acquire, release script's SHA] */
const variants: Record<string, [Acquire, string]> = {
  floor: [(lock, token) => c.set(lock, token, 'PX', 10_000, 'NX'), sha.cad],
  scriptSET_cad: [script(sha.setOnly), sha.cad],
  current: [fencelockAcquire, sha.release],
  current_relEx: [fencelockAcquire, sha.relEx],
  min4_relEx: [script(sha.min4), sha.relEx],
  min3_relEx: [script(sha.min3), sha.relEx],
  min3_cad: [script(sha.min3), sha.cad],
  multiApi_relEx: [multiApi, sha.relEx],
  multiRaw_relEx: [multiRaw, sha.relEx],
};

async function redisCpuUs(): Promise<number> {
  const info = String(await admin.info('cpu'));
  const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

await admin.hset(MARKER, 'epoch', 'abcdef0123456789', 'born', '1', 'trusted', '1', 'ttl', '10000', 'v', '2');
try {
  for (let round = 1; round <= 2; round++) {
    for (const [name, [acquire, release]] of Object.entries(variants)) {
      const pair = async (key: string): Promise<void> => {
        const token = randomBytes(18).toString('base64url');
        const lock = `fencelock:{${key}}:lock`;
        await acquire(lock, token);
        await c.evalsha(release, 1, lock, token);
      };
      for (let i = 0; i < 500; i++) await pair(`warm-${name}-${round}:${i}`);
      const redisBefore = await redisCpuUs();
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < PAIRS; i++) await pair(`${name}-${round}:${i}`);
      const wall = ((performance.now() - started) * 1000) / PAIRS;
      const used = process.cpuUsage(cpu);
      const redis = ((await redisCpuUs()) - redisBefore) / PAIRS;
      const client = (used.user + used.system) / PAIRS;
      console.log(
        `round ${round}  ${name.padEnd(15)} wall ${wall.toFixed(1)}  client ${client.toFixed(1)}  redis ${redis.toFixed(1)} µs/pair`,
      );
    }
  }
} finally {
  c.disconnect();
  admin.disconnect();
  await node.stop();
}
