// The demo's lock stores that decide as one: a local 3-member etcd cluster (Raft) or a local 3-server
// ZooKeeper ensemble (Zab). Both scenarios start them here, name them, hand their processes to the chaos
// (the leader is the one killed) and list them in the report.
import { startEtcdCluster, startZooKeeperEnsemble, type LocalEtcdCluster, type LocalZooKeeperEnsemble } from '../../testing/index.js';
import type { ChaosTargets } from './chaos.js';

/** Where the demo's locks live: 5 local Redis nodes (Redlock), a local etcd cluster or a local ZooKeeper ensemble. */
export type DemoBackend = 'redis' | 'etcd' | 'zookeeper';
export const DEMO_BACKENDS: readonly DemoBackend[] = ['redis', 'etcd', 'zookeeper'];

/** etcd grants leases of at least 2 s (its default minimum): the demo's lease is raised to that on etcd. */
const ETCD_MIN_TTL = 2_000;

/**
 * ZooKeeper's shortest session, 2 ticks of the local ensemble's 200 ms `tickTime`: the demo's ttl is the
 * workers' session timeout, which the ensemble would raise to this anyway.
 */
const ZOOKEEPER_MIN_TTL = 400;

/** The shortest lease the backend grants: the demo's ttl is raised to it (the frozen worker must outlast the real lease). */
export function minTtl(backend: DemoBackend | undefined): number {
  return backend === 'etcd' ? ETCD_MIN_TTL : backend === 'zookeeper' ? ZOOKEEPER_MIN_TTL : 0;
}

/** A local cluster the demo started: its one URL, what it is, its processes, and how the chaos hits it. */
export interface LocalCluster {
  /** `etcd://…` or `zk://…`: the workers' one-entry lock URL list */
  readonly url: string;
  /** e.g. `etcd cluster of 3 members (Raft)` */
  readonly description: string;
  /** what the chaos does to it, for the header line */
  readonly chaosPlan: string;
  readonly chaos: ChaosTargets;
  /** its server processes now (a restarted one with its new pid), for the report's `localNodes` */
  processes(): Array<{ url: string; pid: number | undefined }>;
  stop(): Promise<void>;
}

/** Starts the local cluster of `backend` (undefined for Redis: the demo starts its Redis nodes itself). */
export async function startCluster(backend: DemoBackend | undefined): Promise<LocalCluster | undefined> {
  if (backend === 'etcd') return etcd(await startEtcdCluster({ members: 3 }));
  if (backend === 'zookeeper') return zookeeper(await startZooKeeperEnsemble({ servers: 3 }));
  return undefined;
}

function etcd(cluster: LocalEtcdCluster): LocalCluster {
  const { members } = cluster;
  return {
    url: cluster.url,
    description: `etcd cluster of ${members.length} members (Raft)`,
    chaosPlan: 'the etcd leader killed at 1/3, a worker frozen at 1/2, a member paused at 2/3',
    chaos: {
      nodes: members,
      label: (i) => `etcd member ${members[i]?.name} (${members[i]?.clientPort})`,
      victim: async () => members.indexOf(await cluster.waitForLeader()),
      restarted: 'with its data: it rejoins by Raft (no quarantine needed)',
    },
    processes: () => members.map((m) => ({ url: m.clientUrl, pid: m.pid })),
    stop: () => cluster.stop(),
  };
}

function zookeeper(ensemble: LocalZooKeeperEnsemble): LocalCluster {
  const { servers } = ensemble;
  return {
    url: ensemble.url,
    description: `ZooKeeper ensemble of ${servers.length} servers (Zab)`,
    chaosPlan: 'the ZooKeeper leader killed at 1/3, a worker frozen at 1/2, a server paused at 2/3',
    chaos: {
      nodes: servers,
      label: (i) => `ZooKeeper server ${servers[i]?.name} (${servers[i]?.clientPort})`,
      victim: async () => servers.indexOf(await ensemble.waitForLeader()),
      restarted: 'with its data: it rejoins by Zab',
    },
    processes: () => servers.map((s) => ({ url: `zk://127.0.0.1:${s.clientPort}`, pid: s.pid })),
    stop: () => ensemble.stop(),
  };
}
