// `fencelock/testing`: helpers for running real Redis, etcd and ZooKeeper servers in tests and demos.
export { LocalServer } from './processes.js';
export {
  LocalRedisNode,
  LocalRedisNodes,
  RedisServerNotFoundError,
  startRedisNode,
  startRedisNodes,
  type StartRedisOptions,
} from './redis-nodes.js';
export {
  LocalRedisCluster,
  clusterKeySlot,
  startRedisCluster,
  type ClusterNodeInfo,
  type KillMasterResult,
  type StartRedisClusterOptions,
} from './redis-cluster.js';
export { EtcdNotFoundError, LocalEtcdCluster, LocalEtcdMember, startEtcdCluster, type StartEtcdOptions } from './etcd-cluster.js';
export { LocalRedisSentinel, startRedisSentinel, type StartRedisSentinelOptions } from './redis-sentinel.js';
export {
  LocalZooKeeperEnsemble,
  LocalZooKeeperServer,
  startZooKeeperEnsemble,
  ZooKeeperNotFoundError,
  type StartZooKeeperOptions,
  type ZooKeeperMode,
} from './zookeeper-ensemble.js';
