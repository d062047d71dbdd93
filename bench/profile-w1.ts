// Where fencelock's time goes per acquire + release (docs/benchmarks.md, "Where the time goes").
// Local nodes (one, or `--nodes N`), pairs on fresh keys, against the built package; `--callers N` runs N callers
// at once (W2's shape; default 1, W1's), `--floor` runs the raw floor (SET NX PX + compare-and-delete) instead,
// and `--protocol` fencelock's own acquire and release scripts sent straight with ioredis (its protocol floor:
// what fencelock's JavaScript adds is the difference); on several nodes both fan out to all of them in parallel.
// PAIRS=N sets the measured pairs (default 20,000), WARMUP=N the pairs before them (default 3,000; 200 is W1's warm-up,
// where fencelock's functions still run unoptimised: docs/benchmarks.md, "the cold window").
//
//   npm run build
//   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-w1.ts [--callers 64] [--nodes 3] [--floor | --protocol | --previous]
//   node --import tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile
//
// Prints wall time and client CPU per pair, and the Redis CPU per pair (INFO cpu of the nodes).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { LockManager as Manager } from '../src/index.js';
import { startRedisNode } from '../src/testing/index.js';
import { numberOption } from './diagnostic-args.js';

const argv = process.argv.slice(2);
// --previous: the previous release (bench/previous.ts) instead of this build, for a before/after in one minute.
const PREVIOUS = argv.includes('--previous');
const entry = PREVIOUS ? (await import('./previous.js')).previousEntry() : '../dist/esm/index.js';
const { LockManager } = (await import(entry)) as typeof import('../src/index.js');
const CALLERS = numberOption(argv, '--callers', 1);
const FLOOR = argv.includes('--floor');
// --protocol: fencelock's own two scripts, sent straight with ioredis: what its JavaScript adds is the rest.
const PROTOCOL = argv.includes('--protocol');
const PAIRS = Number(process.env.PAIRS ?? 20_000);
const WARMUP = Number(process.env.WARMUP ?? 3_000);
const SAME_KEY = argv.includes('--same-key');
// --nodes N: fencelock over N local nodes (Redlock; the design table's shape is `--nodes 3 --callers 50`).
const NODES = numberOption(argv, '--nodes', 1);
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

const nodes = await Promise.all(Array.from({ length: NODES }, () => startRedisNode()));
const clients = nodes.map((n) => new Redis(n.url));
const admins = nodes.map((n) => new Redis(n.url));
const admin = admins[0] as Redis;
const locks: Manager = new LockManager(clients, { ttl: 10_000 });
const loadEverywhere = async (source: string): Promise<string> =>
  String((await Promise.all(admins.map((a) => a.script('LOAD', source))))[0]);
const releaseSha = await loadEverywhere(RELEASE);

const { acquireLua, releaseLua } = (await import('../src/redis/scripts/lua.generated.js' as string)) as Record<string, string>;
const acquireSha = await loadEverywhere(acquireLua as string);
const releaseScriptSha = await loadEverywhere(releaseLua as string);

// --floor and --protocol on several nodes fan each step out to all of them in parallel, as Redlock does.
async function protocolPair(key: string): Promise<void> {
  const token = randomBytes(18).toString('base64url');
  const lock = `fencelock:{${key}}:lock`;
  const replies = await Promise.all(clients.map((c) => c.evalsha(acquireSha, 2, lock, 'fencelock:{node}:epoch', token, '10000')));
  if (!replies.every((r) => String(r).startsWith('1 '))) throw new Error(`${key} taken: ${replies.join()}`);
  await Promise.all(clients.map((c) => c.evalsha(releaseScriptSha, 1, lock, token)));
}

async function pair(key: string): Promise<void> {
  if (PROTOCOL) return protocolPair(key);
  if (!FLOOR) {
    await (await locks.acquire(key)).release();
    return;
  }
  const token = randomBytes(16).toString('hex');
  const set = await Promise.all(clients.map((c) => c.set(key, token, 'PX', 10_000, 'NX')));
  if (!set.every((r) => r === 'OK')) throw new Error(`${key} taken`);
  await Promise.all(clients.map((c) => c.evalsha(releaseSha, 1, key, token)));
}

async function run(prefix: string, pairs: number): Promise<void> {
  let next = 0;
  const caller = async (c: number): Promise<void> => {
    // --same-key: each caller loops on a key of its own, as the design table's clients do; else fresh keys.
    while (next < pairs) {
      const i = next++;
      await pair(SAME_KEY ? `${prefix}:c${c}` : `${prefix}:${i}`);
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, (_, c) => caller(c)));
}

const redisCpuUs = async (): Promise<number> => {
  let sum = 0;
  for (const a of admins) {
    const info = await a.info('cpu');
    const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    sum += (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
  }
  return sum;
};

try {
  await run('warmup', WARMUP);
  const redisBefore = await redisCpuUs();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run('pair', PAIRS);
  const wallUs = ((performance.now() - started) * 1000) / PAIRS;
  const used = process.cpuUsage(cpu);
  const redisUs = ((await redisCpuUs()) - redisBefore) / PAIRS;
  const calls = /cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1];
  console.log(
    `${FLOOR ? 'raw floor' : PROTOCOL ? 'fencelock scripts alone' : PREVIOUS ? 'fencelock (previous)' : 'fencelock'}, ${CALLERS} caller(s), ${NODES} node(s): wall ${wallUs.toFixed(1)} µs/pair (${(1e6 / wallUs).toFixed(0)} pairs/s), ` +
      `client CPU ${((used.user + used.system) / PAIRS).toFixed(1)} µs/pair, Redis CPU ${redisUs.toFixed(1)} µs/pair, ${calls ?? 0} EVALSHA in all`,
  );
} finally {
  await locks.close();
  for (const c of [...clients, ...admins]) c.disconnect();
  await Promise.all(nodes.map((n) => n.stop()));
}
