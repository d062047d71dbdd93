// The measured half of docs/choosing.md: single Redis, single Redis with a replica and Sentinel failover,
// Redlock over 5 nodes, etcd over 3 members and ZooKeeper over 3 servers, side by side in one run on this machine,
// through fencelock's one API. Run: `npm run bench:choosing` (about 3 min).
// It writes bench/results/choosing-<date>.json and the table between the markers in docs/choosing.md.
// `-- --only etcd,zookeeper` measures only those setups (single, sentinel, redlock, etcd, zookeeper) and
// `-- --smoke` runs every step briefly: both only print, they write nothing.
//
//   W1   one caller, acquire then release of a fresh resource, in sequence: p50 of each, and of the pair (ms)
//   floor  etcd and ZooKeeper: the same pairs made of the store's two bare writes (bench/floors.ts), p50 (ms);
//          printed beside fencelock's pair as a ratio, and W3's hand-over time in floor pairs
//   W2   64 callers in one process, each on its own resources: acquire+release pairs per second
//   W3   16 callers in one process on one resource, hold 1 ms: acquisitions per second, wait p99 (ms), and the
//        hand-over gap (release() called to the next grant) p50 and p99, printed beside the floor
//   down one node / member SIGKILLed (Sentinel: the replica), then W2 for 2 s: pairs per second still served
//   window  the primary / leader SIGKILLed: ms until the next acquire succeeds (single Redis: restarted at once,
//           as a supervisor would, and it comes back empty; Sentinel: not restarted, the replica is promoted;
//           etcd, ZooKeeper: not restarted, the others elect a leader)
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import { Redis } from 'ioredis';
import { LockManager, QuorumError, LockTimeoutError } from '../src/index.js';
import { startEtcdCluster, startRedisNodes, startRedisSentinel, startZooKeeperEnsemble } from '../src/testing/index.js';
import { ZOOKEEPER_CONFIG } from './config.js';
import { etcdFloor, zookeeperFloor } from './floors.js';
import { percentile, round } from './stats.js';

const argv = process.argv.slice(2);
const smoke = argv.includes('--smoke');
/** `--trace-window`: each failed attempt of the leader-kill window on stderr, with its time and error (issue 23) */
const traceWindow = argv.includes('--trace-window');
const only = argv.includes('--only') ? (argv[argv.indexOf('--only') + 1] ?? '').split(',') : undefined;
/** W1's measured pairs (and the floor's), W1's warm-up pairs, W2's and W3's windows (ms) */
const SIZE = smoke ? { pairs: 100, warmup: 20, w2: 500, w3: 1_000 } : { pairs: 1_000, warmup: 50, w2: 3_000, w3: 4_000 };

interface Setup {
  readonly name: string;
  manager(): LockManager;
  /** SIGKILL a node that is not the only one, a replica or a follower: the rest go on */
  killOne(): Promise<void>;
  /** bring that node back (Redis: empty; a replica: empty, then in sync again; etcd, ZooKeeper: with its data) */
  restoreOne(): Promise<void>;
  /** SIGKILL the primary (single Redis: then restart it; Sentinel: no restart, a failover) or the etcd / ZooKeeper leader */
  killPrimary(): Promise<void>;
  stop(): Promise<void>;
  /** etcd, ZooKeeper: p50 (ms) of `pairs` sequential pairs of the store's two bare writes (bench/floors.ts) */
  floor?(pairs: number, warmup: number): Promise<number>;
}

const TTL = 10_000;
const SENTINEL = 'single Redis + replica, Sentinel failover';
const now = (): number => performance.now();

async function redisSetup(count: number): Promise<Setup> {
  const nodes = await startRedisNodes(count);
  return {
    name: count === 1 ? 'single Redis' : `Redlock, ${count} nodes`,
    manager: () => new LockManager(nodes.urls, { ttl: TTL }),
    killOne: async () => (count === 1 ? undefined : nodes.nodes[count - 1]?.kill()),
    restoreOne: async () => (count === 1 ? undefined : nodes.nodes[count - 1]?.restart()),
    killPrimary: async () => {
      const node = nodes.nodes[0]!;
      await node.kill();
      if (count === 1) await node.restart();
    },
    stop: () => nodes.stop(),
  };
}

/** A primary, one replica and 3 sentinels (down-after 1000 ms); the manager on an ioredis Sentinel client with its defaults. */
async function sentinelSetup(): Promise<Setup> {
  const setup = await startRedisSentinel({ replicas: 1, sentinels: 3, downAfterMs: 1_000 });
  const replica = setup.replicas[0]!;
  const clients: Redis[] = [];
  return {
    name: SENTINEL,
    manager: () => {
      const client = new Redis({ sentinels: setup.sentinels, name: setup.name });
      client.on('error', () => undefined); // connection errors during the failover: the acquires report them
      clients.push(client);
      return new LockManager([client], { ttl: TTL });
    },
    killOne: () => replica.kill(),
    restoreOne: async () => {
      await replica.restart();
      await setup.waitForSync();
    },
    killPrimary: () => setup.primary.kill(),
    stop: async () => {
      for (const c of clients) c.disconnect();
      await setup.stop();
    },
  };
}

async function etcdSetup(): Promise<Setup> {
  const cluster = await startEtcdCluster({ members: 3 });
  const follower = async () => {
    const leader = await cluster.waitForLeader();
    return cluster.members.find((m) => m !== leader && m.isRunning())!;
  };
  let killed: (typeof cluster.members)[number] | undefined;
  return {
    name: 'etcd, 3 members',
    manager: () => new LockManager(cluster.url, { ttl: TTL }),
    killOne: async () => {
      killed = await follower();
      await killed.kill();
    },
    restoreOne: async () => {
      await killed?.restart();
      await cluster.waitForLeader();
    },
    killPrimary: async () => (await cluster.waitForLeader()).kill(),
    stop: () => cluster.stop(),
    floor: (pairs, warmup) => etcdFloor(cluster.endpoints, pairs, warmup),
  };
}

/**
 * Three ZooKeeper servers (the ensemble's tickTime, 200 ms; every write fsynced, as on etcd); the manager's lease is
 * its session, whose timeout is the manager's ttl (10 s). One node down = a follower; the window = until the ensemble has elected another leader
 * and the client's session has moved to a server that serves.
 */
async function zookeeperSetup(): Promise<Setup> {
  const ensemble = await startZooKeeperEnsemble({ servers: 3, config: ZOOKEEPER_CONFIG });
  let killed: (typeof ensemble.servers)[number] | undefined;
  return {
    name: 'ZooKeeper, 3 servers',
    manager: () => new LockManager(ensemble.url, { ttl: TTL }),
    killOne: async () => {
      const leader = await ensemble.waitForLeader();
      killed = ensemble.servers.find((s) => s !== leader && s.isRunning())!;
      await killed.kill();
    },
    restoreOne: async () => {
      await killed?.restart();
      await killed?.waitUntilServing();
      await ensemble.waitForLeader();
    },
    killPrimary: async () => (await ensemble.waitForLeader()).kill(),
    stop: () => ensemble.stop(),
    floor: (pairs, warmup) => zookeeperFloor(ensemble.connectionString, pairs, warmup),
  };
}

let counter = 0;
const fresh = (label: string): string => `${label}-${++counter}`;

async function w1(locks: LockManager): Promise<{ acquire: number | null; release: number | null; pair: number | null }> {
  const acquire: number[] = [];
  const release: number[] = [];
  const pair: number[] = [];
  for (let i = 0; i < SIZE.warmup + SIZE.pairs; i++) {
    const t0 = now();
    const lock = await locks.acquire(fresh('w1'));
    const t1 = now();
    await lock.release();
    if (i >= SIZE.warmup) {
      acquire.push(t1 - t0);
      release.push(now() - t1);
      pair.push(now() - t0);
    }
  }
  const p50 = (samples: number[]): number | null => round(percentile(samples, 50), 3);
  return { acquire: p50(acquire), release: p50(release), pair: p50(pair) };
}

/** `callers` loops of acquire+release on their own resources for `ms`: pairs per second, and failed calls. */
async function w2(locks: LockManager, ms: number, callers = 64): Promise<{ pairsPerSecond: number; errors: number }> {
  const end = now() + ms;
  let pairs = 0;
  let errors = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (now() < end) {
        try {
          const lock = await locks.acquire(fresh('w2'), { timeout: 2_000 });
          await lock.release();
          pairs++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { pairsPerSecond: Math.round(pairs / ((now() - started) / 1000)), errors };
}

async function w3(
  locks: LockManager,
): Promise<{ acquisitionsPerSecond: number; waitP99: number | null; gapP50: number | null; gapP99: number | null }> {
  const resource = fresh('w3');
  const end = now() + SIZE.w3;
  const waits: number[] = [];
  /** hand-over gaps: from a holder calling release() to the next holder's acquire() resolving */
  const gaps: number[] = [];
  let releasing = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (now() < end) {
        const t0 = now();
        const lock = await locks.acquire(resource, { timeout: TTL });
        const acquired = now();
        waits.push(acquired - t0);
        if (releasing > 0) gaps.push(acquired - releasing);
        await new Promise((r) => setTimeout(r, 1));
        releasing = now();
        await lock.release();
      }
    }),
  );
  return {
    acquisitionsPerSecond: Math.round(waits.length / ((now() - started) / 1000)),
    waitP99: round(percentile(waits, 99), 1),
    gapP50: round(percentile(gaps, 50), 3),
    gapP99: round(percentile(gaps, 99), 1),
  };
}

async function window(setup: Setup, locks: LockManager): Promise<number | null> {
  await setup.killPrimary();
  const killed = now();
  // Bounded: 30 s of attempts at most.
  while (now() - killed < 30_000) {
    try {
      const lock = await locks.acquire(fresh('window'), { timeout: 1_000 });
      await lock.release();
      return Math.round(now() - killed);
    } catch (error) {
      if (traceWindow) process.stderr.write(`window: attempt failed at ${Math.round(now() - killed)} ms: ${String(error)}\n`);
      if (!(error instanceof QuorumError || error instanceof LockTimeoutError)) throw error;
      // A client that is reconnecting fails an acquire at once, without I/O: without this pause the loop
      // would never yield, and the client could never reconnect (a Sentinel client found no new primary in 30 s).
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return null;
}

async function measure(make: () => Promise<Setup>): Promise<Record<string, unknown>> {
  const setup = await make();
  const locks = setup.manager();
  try {
    await w1(locks); // warm-up: connections, scripts, JIT
    const latency = await w1(locks);
    // Beside fencelock's W1, on the same warm servers: the floor pair of the store's own two writes.
    const floor = setup.floor ? await setup.floor(SIZE.pairs, SIZE.warmup) : null;
    const throughput = await w2(locks, SIZE.w2);
    const contention = await w3(locks);
    if (floor !== null) console.log(floorLine(setup.name, latency.pair, floor, contention));
    await setup.killOne();
    const degraded = setup.name === 'single Redis' ? { pairsPerSecond: 0, errors: null } : await w2(locks, SIZE.w2 * (2 / 3));
    await setup.restoreOne();
    const outage = await window(setup, locks);
    process.stderr.write(`${setup.name}: done\n`);
    return { setup: setup.name, latency, floor, throughput, contention, degraded, outageMs: outage };
  } finally {
    await locks.close();
    await setup.stop();
  }
}

/**
 * fencelock against the floor: its pair's p50 over the floor's (target: at most 1.25), and a W3 hand-over
 * (1 s / acquisitions per second) in floor pairs (target: at most 1.5).
 */
function floorLine(
  setup: string,
  pair: number | null,
  floor: number,
  { acquisitionsPerSecond, gapP50, gapP99 }: { acquisitionsPerSecond: number; gapP50: number | null; gapP99: number | null },
): string {
  const ratio = pair === null ? NaN : pair / floor;
  const handOver = 1000 / acquisitionsPerSecond / floor;
  return (
    `${setup}: floor pair p50 ${floor} ms; fencelock pair p50 ${pair} ms = ${ratio.toFixed(2)}x the floor (target <= 1.25); ` +
    `W3 ${acquisitionsPerSecond} acq/s = a hand-over per ${handOver.toFixed(2)} floor pairs (target <= 1.5, i.e. >= ${Math.round(1000 / (1.5 * floor))} acq/s); ` +
    `hand-over gap (release() called to the next grant) p50 ${gapP50} ms = ${((gapP50 ?? NaN) / floor).toFixed(2)} floor pairs, p99 ${gapP99} ms`
  );
}

const SETUPS: Record<string, () => Promise<Setup>> = {
  single: () => redisSetup(1),
  sentinel: sentinelSetup,
  redlock: () => redisSetup(5),
  etcd: etcdSetup,
  zookeeper: zookeeperSetup,
};
for (const name of only ?? []) if (!(name in SETUPS)) throw new Error(`--only: unknown setup ${name} (${Object.keys(SETUPS).join(', ')})`);
const rows: Record<string, unknown>[] = [];
for (const [name, make] of Object.entries(SETUPS)) if (!only || only.includes(name)) rows.push(await measure(make));
if (smoke || only) {
  // A partial or brief run: its rows printed, nothing written.
  console.log(JSON.stringify(rows, null, 2));
  process.exit(0);
}
const date = new Date().toISOString().slice(0, 10);
const machine = { cpus: os.cpus().length, node: process.version, at: new Date().toISOString() };
await mkdir('bench/results', { recursive: true });
await writeFile(`bench/results/choosing-${date}.json`, JSON.stringify({ machine, rows }, null, 2) + '\n');

type Row = {
  setup: string;
  latency: { acquire: number; release: number; pair: number };
  floor: number | null;
  throughput: { pairsPerSecond: number };
  contention: { acquisitionsPerSecond: number; waitP99: number };
  degraded: { pairsPerSecond: number };
  outageMs: number | null;
};
/** what the last two columns need said for a setup, beyond the figure */
const downNote: Record<string, string> = { [SENTINEL]: ' (the replica killed: the primary alone)' };
const windowNote: Record<string, string> = {
  'single Redis': ' (restarted at once, empty: quarantined for the longest ttl)',
  [SENTINEL]: ' (not restarted: Sentinel promotes the replica, down-after 1,000 ms)',
};
const table = [
  '| setup | W1 acquire p50 | W1 release p50 | W1 pair p50 | floor: 2 writes, p50 | W2 pairs/s | W3 acq/s | W3 wait p99 | pairs/s with one node down | next grant after the primary/leader is killed |',
  '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ...(rows as Row[]).map(
    (r) =>
      `| ${r.setup} | ${r.latency.acquire} ms | ${r.latency.release} ms | ${r.latency.pair} ms | ${
        r.floor === null ? '–' : `${r.floor} ms (pair ${(r.latency.pair / r.floor).toFixed(2)}×)`
      } | ${r.throughput.pairsPerSecond.toLocaleString('en')} | ${r.contention.acquisitionsPerSecond} | ${r.contention.waitP99} ms | ${
        r.setup === 'single Redis' ? '0 (its only node)' : `${r.degraded.pairsPerSecond.toLocaleString('en')}${downNote[r.setup] ?? ''}`
      } | ${r.outageMs === null ? 'none within 30 s' : `${r.outageMs.toLocaleString('en')} ms`}${windowNote[r.setup] ?? ''} |`,
  ),
].join('\n');
const stamp = `Measured ${machine.at.slice(0, 16).replace('T', ' ')} UTC on ${machine.cpus} cores, Node ${machine.node}, everything local (\`npm run ${process.env.npm_lifecycle_event === 'bench' ? 'bench' : 'bench:choosing'}\`; raw: \`bench/results/choosing-${date}.json\`).`;
const page = await readFile('docs/choosing.md', 'utf8');
const begin = '<!-- choosing:begin -->';
const end = '<!-- choosing:end -->';
const [head, rest] = page.split(begin);
const tail = rest?.split(end)[1];
if (head === undefined || tail === undefined) throw new Error('docs/choosing.md lacks its markers');
await writeFile('docs/choosing.md', `${head}${begin}\n${stamp}\n\n${table}\n${end}${tail}`);
console.log(table);
