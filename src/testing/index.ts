// `fencelock/testing`: helpers for running real Redis servers in tests and demos.
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
