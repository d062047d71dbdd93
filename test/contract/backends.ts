// The stores the contract suite runs against, behind one shape: a way to make managers on a running store.
// Redis on one node and Redlock on five (ioredis), etcd on a local 3-member cluster, ZooKeeper on a local
// 3-server ensemble.
import { LockManager, type LockManagerOptions } from '../../src/index.js';
import { startEtcdCluster, startZooKeeperEnsemble } from '../../src/testing/index.js';
import { setup } from '../support/harness.js';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';

/** Options every backend takes (etcd refuses the Redis-only ones). */
export type CommonOptions = Pick<LockManagerOptions, 'ttl' | 'acquireTimeout' | 'retry' | 'keyPrefix'>;

export interface RunningBackend {
  manager(options?: CommonOptions): Promise<LockManager>;
  close(): Promise<void>;
}

export interface BackendUnderTest {
  readonly name: string;
  /** false, or why this backend's tests skip (a missing optional component) */
  readonly skip: false | string;
  start(): Promise<RunningBackend>;
}

function redis(nodes: number): BackendUnderTest {
  return {
    name: nodes === 1 ? 'redis (1 node)' : `redlock (${nodes} nodes)`,
    skip: false,
    async start() {
      const env = await setup(nodes);
      return {
        // A generous nodeTimeout (the default is 200 ms; under ttl / 3 for the suite's 2 s ttl): these tests are
        // about the contract, not about a slow answer. At 150 ms a full suite run on a loaded 2-core machine
        // (load average 17) failed a semaphore acquire with NO_QUORUM: its one node answered too late.
        manager: (options) => env.manager('ioredis', { nodeTimeout: 600, ...options }),
        close: () => env.close(),
      };
    },
  };
}

const etcd: BackendUnderTest = {
  name: 'etcd (3 members)',
  skip: requireEtcd('etcd (the etcd backend)'),
  async start() {
    const cluster = await startEtcdCluster({ members: 3 });
    const managers: LockManager[] = [];
    return {
      async manager(options) {
        const manager = new LockManager(cluster.url, options);
        managers.push(manager);
        return manager;
      },
      async close() {
        await Promise.all(managers.map((m) => m.close()));
        await cluster.stop();
      },
    };
  },
};

const zookeeper: BackendUnderTest = {
  name: 'zookeeper (3 servers)',
  skip: requireZooKeeper('ZooKeeper (the ZooKeeper backend)'),
  async start() {
    const ensemble = await startZooKeeperEnsemble({ servers: 3 });
    const managers: LockManager[] = [];
    return {
      async manager(options) {
        const manager = new LockManager(ensemble.url, options);
        managers.push(manager);
        return manager;
      },
      async close() {
        await Promise.all(managers.map((m) => m.close()));
        await ensemble.stop();
      },
    };
  },
};

export const BACKENDS: readonly BackendUnderTest[] = [redis(1), redis(5), etcd, zookeeper];
