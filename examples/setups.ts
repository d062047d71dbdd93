// Each setup of docs/choosing.md, built as its line there builds it (docs/cluster.md, docs/etcd.md and
// docs/zookeeper.md show the same constructors), but on throw-away local servers instead of your own
// addresses: one lock held, a second caller refused meanwhile, then a later hold with a larger fence.
//
//   npx tsx examples/setups.ts redis|sentinel|redlock|cluster|etcd|zookeeper
//
// Prints one JSON line ({ setup, fences, refusedWhileHeld }) and exits by itself: every client is closed,
// every server stopped. etcd needs an `etcd` binary, ZooKeeper its jars and a Java runtime (see the README).
// In an application, import from 'fencelock' and 'fencelock/testing' rather than ../src.
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import { LockManager } from '../src/index.js';
import { startEtcdCluster, startRedisCluster, startRedisNodes, startRedisSentinel, startZooKeeperEnsemble } from '../src/testing/index.js';

/** Two holds one after the other, and a tryAcquire while the first is held: what every setup promises. */
async function exercise(locks: LockManager): Promise<{ fences: string[]; refusedWhileHeld: boolean }> {
  const fences: string[] = [];
  let refusedWhileHeld = false;
  await locks.withLock('orders:42', async (lock) => {
    fences.push(lock.fence.toString());
    refusedWhileHeld = (await locks.tryAcquire('orders:42')) === null;
  });
  await locks.withLock('orders:42', async (lock) => void fences.push(lock.fence.toString()));
  return { fences, refusedWhileHeld };
}

const setups: Record<string, () => Promise<{ fences: string[]; refusedWhileHeld: boolean }>> = {
  // single Redis: new LockManager([new Redis('redis://10.0.0.1:6379')])
  redis: async () => {
    await using node = await startRedisNodes(1);
    const client = new Redis(node.urls[0]!);
    const locks = new LockManager([client]);
    try {
      return await exercise(locks);
    } finally {
      await locks.close();
      client.disconnect();
    }
  },
  // single Redis + replica, Sentinel failover
  sentinel: async () => {
    await using sentinel = await startRedisSentinel({ replicas: 1, sentinels: 3 });
    const client = new Redis({ sentinels: sentinel.sentinels, name: sentinel.name });
    const locks = new LockManager([client], { waitForReplicas: { replicas: 1, timeout: 100 } });
    try {
      return await exercise(locks);
    } finally {
      await locks.close();
      client.disconnect();
    }
  },
  // Redlock over 5 independent primaries, from URLs: the manager makes and closes the connections
  redlock: async () => {
    await using nodes = await startRedisNodes(5);
    const locks = new LockManager(nodes.urls);
    try {
      return await exercise(locks);
    } finally {
      await locks.close();
    }
  },
  // docs/cluster.md: a Redis Cluster counts as one node, with either client library
  cluster: async () => {
    await using cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
    const ioredisCluster = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]);
    const nodeRedisCluster = createCluster({
      rootNodes: [{ url: cluster.urls[0]! }],
      defaults: { disableOfflineQueue: true },
      topologyRefreshOnReconnectionAttemptStrategy: 300,
    });
    await nodeRedisCluster.connect();
    const locks = new LockManager([ioredisCluster]);
    const locks2 = new LockManager([nodeRedisCluster], { keyPrefix: 'fencelock-nr:' });
    try {
      const first = await exercise(locks);
      const second = await exercise(locks2);
      return { fences: [...first.fences, ...second.fences], refusedWhileHeld: first.refusedWhileHeld && second.refusedWhileHeld };
    } finally {
      await locks.close();
      await locks2.close();
      ioredisCluster.disconnect();
      await nodeRedisCluster.close();
    }
  },
  // docs/etcd.md: new LockManager('etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379', { ttl: 10_000 })
  etcd: async () => {
    await using etcd = await startEtcdCluster({ members: 3 });
    const locks = new LockManager(etcd.url, { ttl: 10_000 });
    try {
      return await exercise(locks);
    } finally {
      await locks.close();
    }
  },
  // docs/zookeeper.md: new LockManager('zk://10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181', { ttl: 10_000 })
  zookeeper: async () => {
    await using zk = await startZooKeeperEnsemble({ servers: 3 });
    const locks = new LockManager(zk.url, { ttl: 10_000 });
    try {
      return await exercise(locks);
    } finally {
      await locks.close();
    }
  },
};

const setup = process.argv[2] ?? '';
const run = setups[setup];
if (!run) {
  console.error(`usage: tsx examples/setups.ts ${Object.keys(setups).join('|')}`);
  process.exitCode = 2;
} else {
  console.log(JSON.stringify({ setup, ...(await run()) }));
}
