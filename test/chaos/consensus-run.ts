// Runs one consensus fault schedule (consensus-schedule.ts) against real processes: a fresh 3-member etcd cluster
// or 3-server ZooKeeper ensemble, a TCP proxy in front of each member's client port (the clients know only the
// proxies: etcd3's gRPC client and node-zookeeper-client connect to the addresses given and to nothing the
// servers advertise), a Redis storage node for the fenced store, the schedule's workers, and a nemesis applying
// the steps at their times. Every history goes through the same checker as Redis's (history.ts).
import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  startEtcdCluster,
  startRedisNode,
  startZooKeeperEnsemble,
  type LocalEtcdCluster,
  type LocalServer,
  type LocalZooKeeperEnsemble,
} from '../../src/testing/index.js';
import { startProxy, startWorkers, thaw, type Proxy, type WorkerPool } from '../support/faults/index.js';
import { ETCD_ARGS, MEMBERS, type ConsensusFault, type ConsensusSchedule } from './consensus-schedule.js';
import type { Outcome } from './run-schedule.js';
import { addLatency, cutPaths, pauseServer, pauseWorker } from './shared-faults.js';
import { judge } from './verdict.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** bound on every wait for a member or leader after a fault (the helpers' own default) */
const SETTLE_TIMEOUT_MS = 20_000;

/** The cluster under test, whichever backend: its members as processes, and the two faults that differ per backend. */
/** A member: an etcd member or a ZooKeeper server, both with the client port the proxies front. */
type Member = LocalServer & { readonly clientPort: number };

interface Cluster {
  readonly members: readonly Member[];
  /** the member leading now; undefined if none does within the bound */
  leader(): Promise<Member | undefined>;
  /** restart `members` empty (one: the safe way for the backend; a majority: --unsafe majority-loss), resolved once they serve */
  restartEmpty(members: readonly number[]): Promise<void>;
  /** a member back from a kill, with its data */
  restart(member: number): Promise<void>;
  stop(): Promise<void>;
}

function etcdCluster(c: LocalEtcdCluster): Cluster {
  return {
    members: c.members,
    leader: () => c.waitForLeader(5_000).catch(() => undefined),
    async restartEmpty(members) {
      if (members.length === 1) return c.restartEmpty(c.members[members[0]!]!, SETTLE_TIMEOUT_MS);
      // etcd re-adds an empty member through a running majority; with a majority wiped there is none, so the only way
      // to lose a majority's data is to wipe every member and start the cluster anew on the same ports (same
      // names, peer URLs and token): a new cluster, revisions from 1 again.
      if (members.length !== MEMBERS) throw new Error(`etcd: restart empty ${members.length} of ${MEMBERS} members is not supported`);
      await Promise.all(c.members.map((m) => m.kill()));
      await Promise.all(c.members.map((m) => rm(path.join(m.dir, 'data'), { recursive: true, force: true })));
      await Promise.all(c.members.map((m) => m.spawn(false)));
      await c.waitForLeader(SETTLE_TIMEOUT_MS);
    },
    restart: (member) => c.members[member]!.restart(),
    stop: () => c.stop(),
  };
}

function zooKeeperEnsemble(e: LocalZooKeeperEnsemble): Cluster {
  return {
    members: e.servers,
    leader: () => e.waitForLeader(5_000).catch(() => undefined),
    async restartEmpty(members) {
      const servers = members.map((i) => e.servers[i]!);
      await Promise.all(servers.map((s) => s.restartEmpty()));
      // Synced with a leader (a full snapshot from it) before anything else may touch a member (rule majority-keeps-data).
      await Promise.all(servers.map((s) => s.waitUntilServing(SETTLE_TIMEOUT_MS)));
    },
    restart: (member) => e.servers[member]!.restart(),
    stop: () => e.stop(),
  };
}

/** Applies one fault and undoes it when its time is up (a killed member comes back with its data). */
async function apply(f: ConsensusFault, cluster: Cluster, proxies: readonly Proxy[], pool: WorkerPool): Promise<void> {
  const member = (i: number): Member => cluster.members[i]!;
  switch (f.kind) {
    case 'kill':
      await member(f.member).kill();
      await sleep(f.downMs);
      return cluster.restart(f.member);
    case 'kill-leader': {
      // Whoever leads now: the schedule cannot know (elections are timing).
      const leader = await cluster.leader();
      if (!leader) throw new Error('no leader to kill');
      const index = cluster.members.indexOf(leader);
      await leader.kill();
      await sleep(f.downMs);
      return cluster.restart(index);
    }
    case 'restart-empty':
      return cluster.restartEmpty(f.members);
    case 'pause-member':
      return pauseServer(member(f.member), f.ms);
    case 'pause-worker':
      return pauseWorker(pool, f.worker, f.ms);
    case 'latency':
      return addLatency(proxies[f.member]!, f.latencyMs, f.ms);
    case 'cut':
      return cutPaths(
        f.members.map((i) => proxies[i]!),
        f.how,
        f.ms,
      );
  }
}

const touchesMembers = (f: ConsensusFault): boolean =>
  f.kind === 'kill' || f.kind === 'kill-leader' || f.kind === 'restart-empty' || f.kind === 'pause-member';

async function startCluster(s: ConsensusSchedule): Promise<Cluster> {
  return s.backend === 'etcd'
    ? etcdCluster(await startEtcdCluster({ members: MEMBERS, args: [...ETCD_ARGS] }))
    : zooKeeperEnsemble(await startZooKeeperEnsemble({ servers: MEMBERS }));
}

export async function runConsensusSchedule(s: ConsensusSchedule): Promise<Outcome> {
  const warnings: string[] = [];
  const [cluster, storage] = await Promise.all([startCluster(s), startRedisNode()]);
  const proxies: Proxy[] = [];
  let pool: WorkerPool | undefined;
  try {
    proxies.push(...(await Promise.all(cluster.members.map((m) => startProxy(m.clientPort)))));
    const scheme = s.backend === 'etcd' ? 'etcd' : 'zk';
    const lockUrl = `${scheme}://${proxies.map((p) => `127.0.0.1:${p.port}`).join(',')}`;
    const storePrefix = `chaos:${s.backend}:${s.seed}:`;
    pool = await startWorkers(s.workers, (i) => ({
      // One etcd:// or zk:// URL: the worker hands it to LockManager as the one string it takes for a cluster.
      lockUrls: [lockUrl],
      storageUrl: storage.url,
      resources: s.resources,
      durationMs: s.durationMs,
      storePrefix,
      // ttl only: nodeTimeout, restartQuarantine, driftFactor and waitForReplicas are Redis's (etcd and ZooKeeper refuse them).
      managerOptions: { ttl: s.managerTtls[i]! },
      variations: s.managers[i]!,
    }));
    const start = performance.now();
    const running = pool;
    let faults = 0;
    // Rule majority-keeps-data at run time: a later member step waits until an empty restart has finished (the
    // member serves again), however long this machine takes for it.
    let emptyRestart: Promise<unknown> = Promise.resolve();
    const nemesis = s.steps.map(async (step, i) => {
      await sleep(Math.max(0, start + step.at - performance.now()));
      try {
        if (touchesMembers(step.fault)) {
          const waitFrom = performance.now();
          await emptyRestart;
          const waited = performance.now() - waitFrom;
          if (waited > 50) warnings.push(`step ${i} (${step.fault.kind}) waited ${Math.round(waited)} ms for an empty restart to finish`);
        }
        const applying = apply(step.fault, cluster, proxies, running);
        if (step.fault.kind === 'restart-empty') emptyRestart = applying.catch(() => undefined);
        faults++;
        await applying;
      } catch (error) {
        warnings.push(`step ${i} (${step.fault.kind}) failed: ${(error as Error).message.split('\n')[0]}`);
      }
    });
    await Promise.all(nemesis);
    const { operations, violations, summary } = await judge(
      pool,
      s.durationMs + 20_000,
      { url: storage.url, prefix: storePrefix, resources: s.resources },
      warnings,
    );
    return { operations, faults, violations, warnings, summary };
  } finally {
    if (pool) {
      for (const w of pool.workers) thaw(w);
      await pool.stop();
    }
    await Promise.all(proxies.map((p) => p.close()));
    for (const m of cluster.members) if (m.paused) m.resume();
    await Promise.all([cluster.stop(), storage.stop()]);
  }
}
