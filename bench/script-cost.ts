// What each step of fencelock's scripts costs the server (docs/benchmarks.md, "Where the time goes").
// One local node; each variant runs N calls on fresh keys, pipelined 500 at a time so that the per-request
// cost of reading and writing the socket is spread thin, and reports the server's CPU per call from
// `INFO commandstats` (the script's own time, nested commands included). The variants build up from a bare
// `SET NX PX` to the full acquire script, one protocol step at a time, then the two release scripts.
//
//   node --import tsx bench/script-cost.ts          (N=30000 by default)
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startRedisNode } from '../src/testing/index.js';

const N = Number(process.env.N ?? 30_000);
const BATCH = 500;

// Each step adds one thing the fenced acquire does; KEYS[1] lock, KEYS[2] marker, KEYS[3] queue, KEYS[4] 0.1 counter.
const SET = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])";
const STEPS: readonly (readonly [string, string])[] = [
  ['script: GET + SET PX (a script at all)', `redis.call('GET', KEYS[1]) ${SET}`],
  ['+ fence (HINCRBY on the marker)', `redis.call('GET', KEYS[1]) redis.call('HINCRBY', KEYS[2], 'fence', 1) ${SET}`],
  [
    '+ node state (HMGET of the marker)',
    `redis.call('HMGET', KEYS[2], 'epoch', 'born', 'trusted', 'ttl') redis.call('GET', KEYS[1]) redis.call('HINCRBY', KEYS[2], 'fence', 1) ${SET}`,
  ],
  [
    '+ queue check (ZRANGE)',
    `redis.call('HMGET', KEYS[2], 'epoch', 'born', 'trusted', 'ttl') redis.call('GET', KEYS[1]) redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES') redis.call('HINCRBY', KEYS[2], 'fence', 1) ${SET}`,
  ],
  [
    '+ 0.1 counter fold (HGET)',
    `redis.call('HMGET', KEYS[2], 'epoch', 'born', 'trusted', 'ttl') redis.call('GET', KEYS[1]) redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES') redis.call('HGET', KEYS[4], 'n') redis.call('HINCRBY', KEYS[2], 'fence', 1) ${SET}`,
  ],
];
const FLOOR_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

const node = await startRedisNode();
const redis = new Redis(node.url);
try {
  const { acquireLua, releaseLua } = (await import('../src/redis/scripts/lua.generated.js' as string)) as Record<string, string>;
  const load = async (lua: string): Promise<string> => String(await redis.script('LOAD', lua));
  const token = (): string => randomBytes(18).toString('base64url');

  /** Server µs per call of `command` over N calls made by `call(i)` (pipelined). */
  async function measure(command: string, call: (p: ReturnType<Redis['pipeline']>, i: number) => void): Promise<number> {
    await redis.flushall();
    // a trusted node, as in steady state (an untrusted one also reads the clock for its quarantine)
    await redis.hset('f:{node}:marker', { epoch: 'abcdef0123456789', born: Date.now(), trusted: '1', ttl: '10000', v: '2' });
    await redis.config('RESETSTAT');
    for (let i = 0; i < N; i += BATCH) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(N, i + BATCH); j++) call(p, j);
      await p.exec();
    }
    const stats = String(await redis.info('commandstats'));
    const line = stats.split('\n').find((l) => l.startsWith(`cmdstat_${command}:`)) ?? '';
    const usec = Number(/usec=(\d+)/.exec(line)?.[1]);
    const calls = Number(/calls=(\d+)/.exec(line)?.[1]);
    return usec / calls;
  }

  const rows: [string, number][] = [];
  rows.push(["SET NX PX (the floor's acquire)", await measure('set', (p, i) => p.set(`k${i}`, token(), 'PX', 10_000, 'NX'))]);
  for (const [label, lua] of STEPS) {
    const sha = await load(lua);
    rows.push([
      label,
      await measure('evalsha', (p, i) => p.evalsha(sha, 4, `{r${i}}:lock`, '{node}:m', `{r${i}}:queue`, `{r${i}}:fence`, token(), '10000')),
    ]);
  }
  const acquire = await load(acquireLua as string);
  // The uncontended first attempt: token and ttl alone (redlock.ts acquireArgs).
  const acquireArgs = (i: number): string[] => [`f:{r${i}}:lock`, 'f:{node}:marker', token(), '10000'];
  rows.push([
    'fencelock acquire.lua (cheap path: trusted node, nobody queued)',
    await measure('evalsha', (p, i) => p.evalsha(acquire, 2, ...acquireArgs(i))),
  ]);

  // Releases: each key is set first (outside the measured command), then released by its owner.
  const floorRelease = await load(FLOOR_RELEASE);
  const release = await load(releaseLua as string);
  for (const [label, sha] of [
    ["compare-and-delete (the floor's release)", floorRelease],
    ['fencelock release.lua (nobody waiting: GET, EXISTS, DEL)', release],
  ] as const) {
    rows.push([
      label,
      await measure('evalsha', (p, i) => {
        const t = `t${i}`;
        p.set(`f:{r${i}}:lock`, t, 'PX', 10_000);
        p.evalsha(sha, 1, `f:{r${i}}:lock`, t);
      }),
    ]);
  }
  // The two hand-overs inside the release (W3's and W4's), each key set first and, for W4's, a waiter of another
  // process queued (its place live for 15 s): the releaser passes its fence hint ('' here) and so the marker.
  const waiter = (i: number): string => `abcdefgh.${i}`.padEnd(34, 'x');
  rows.push([
    "fencelock release.lua, granting the releasing process's next caller (W3's hand-over)",
    await measure('evalsha', (p, i) => {
      const t = `t${i}`;
      p.set(`f:{r${i}}:lock`, t, 'PX', 10_000);
      p.evalsha(release, 2, `f:{r${i}}:lock`, 'f:{node}:marker', t, '', waiter(i), '1700000000000.000', '10000', '0', '15000');
    }),
  ]);
  rows.push([
    "fencelock release.lua, granting a queued waiter of another process, told by PUBLISH (W4's)",
    await measure('evalsha', (p, i) => {
      const t = `t${i}`;
      p.set(`f:{r${i}}:lock`, t, 'PX', 10_000);
      p.zadd(`f:{r${i}}:queue`, '1700000000000.000', waiter(i));
      p.zadd(`f:{r${i}}:leases`, String(Date.now() + 15_000), waiter(i));
      p.evalsha(release, 2, `f:{r${i}}:lock`, 'f:{node}:marker', t, '');
    }),
  ]);
  console.log(`Redis CPU per call, µs (${N} calls each, pipelined ${BATCH} at a time, INFO commandstats)`);
  for (const [label, us] of rows) console.log(`${us.toFixed(2).padStart(7)}  ${label}`);
} finally {
  redis.disconnect();
  await node.stop();
}
