// The measured half of docs/choosing.md: single Redis, single Redis with a replica and Sentinel failover,
// Redlock over 5 nodes, etcd over 3 members and ZooKeeper over 3 servers, side by side in one run on this machine,
// through fencelock's one API. Run: `npm run bench:choosing` (about 3 min).
// It writes bench/results/choosing-<date>.json and the table between the markers in docs/choosing.md.
//
//   W1   one caller, acquire then release of a fresh resource, in sequence: p50 of each (ms)
//   W2   64 callers in one process, each on its own resources: acquire+release pairs per second
//   W3   16 callers in one process on one resource, hold 1 ms: acquisitions per second, wait p99 (ms)
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
import { percentile, round } from './stats.js';

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
  };
}

let counter = 0;
const fresh = (label: string): string => `${label}-${++counter}`;

async function w1(locks: LockManager): Promise<{ acquire: number | null; release: number | null }> {
  const acquire: number[] = [];
  const release: number[] = [];
  for (let i = 0; i < 550; i++) {
    const t0 = now();
    const lock = await locks.acquire(fresh('w1'));
    const t1 = now();
    await lock.release();
    if (i >= 50) {
      acquire.push(t1 - t0);
      release.push(now() - t1);
    }
  }
  return { acquire: round(percentile(acquire, 50), 3), release: round(percentile(release, 50), 3) };
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

async function w3(locks: LockManager): Promise<{ acquisitionsPerSecond: number; waitP99: number | null }> {
  const resource = fresh('w3');
  const end = now() + 4_000;
  const waits: number[] = [];
  const started = now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (now() < end) {
        const t0 = now();
        const lock = await locks.acquire(resource, { timeout: TTL });
        waits.push(now() - t0);
        await new Promise((r) => setTimeout(r, 1));
        await lock.release();
      }
    }),
  );
  return { acquisitionsPerSecond: Math.round(waits.length / ((now() - started) / 1000)), waitP99: round(percentile(waits, 99), 1) };
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
    const throughput = await w2(locks, 3_000);
    const contention = await w3(locks);
    await setup.killOne();
    const degraded = setup.name === 'single Redis' ? { pairsPerSecond: 0, errors: null } : await w2(locks, 2_000);
    await setup.restoreOne();
    const outage = await window(setup, locks);
    process.stderr.write(`${setup.name}: done\n`);
    return { setup: setup.name, latency, throughput, contention, degraded, outageMs: outage };
  } finally {
    await locks.close();
    await setup.stop();
  }
}

const rows = [
  await measure(() => redisSetup(1)),
  await measure(sentinelSetup),
  await measure(() => redisSetup(5)),
  await measure(etcdSetup),
  await measure(zookeeperSetup),
];
const date = new Date().toISOString().slice(0, 10);
const machine = { cpus: os.cpus().length, node: process.version, at: new Date().toISOString() };
await mkdir('bench/results', { recursive: true });
await writeFile(`bench/results/choosing-${date}.json`, JSON.stringify({ machine, rows }, null, 2) + '\n');

type Row = {
  setup: string;
  latency: { acquire: number; release: number };
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
  '| setup | W1 acquire p50 | W1 release p50 | W2 pairs/s | W3 acq/s | W3 wait p99 | pairs/s with one node down | next grant after the primary/leader is killed |',
  '|---|--:|--:|--:|--:|--:|--:|--:|',
  ...(rows as Row[]).map(
    (r) =>
      `| ${r.setup} | ${r.latency.acquire} ms | ${r.latency.release} ms | ${r.throughput.pairsPerSecond.toLocaleString('en')} | ${r.contention.acquisitionsPerSecond} | ${r.contention.waitP99} ms | ${
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
