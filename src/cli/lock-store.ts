// Which lock store a CLI target names, in one place for the commands, the demo and its workers: Redis nodes
// (a list of redis:// URLs), or an etcd cluster / a ZooKeeper ensemble (a one-entry list of its etcd:// or
// zk:// URL, as --etcd and --zk give it).
import { isEtcdInput } from '../etcd/index.js';
import { LockManager, type LockManagerOptions } from '../index.js';
import { isZooKeeperInput } from '../zookeeper/index.js';

/** The etcd:// or zk:// URL when `urls` is a one-entry list of one (a cluster that decides as one); undefined for Redis nodes. */
export function consensusUrl(urls: readonly string[]): string | undefined {
  const [first] = urls;
  return urls.length === 1 && first !== undefined && (isEtcdInput(first) || isZooKeeperInput(first)) ? first : undefined;
}

/**
 * A manager on the store `urls` names. `redisOnly` (nodeTimeout) applies to Redis nodes alone: etcd and
 * ZooKeeper refuse Redis-only options (InvalidArgumentError), their leases being their own.
 */
export function lockManager(
  urls: readonly string[],
  options: LockManagerOptions = {},
  redisOnly: Pick<LockManagerOptions, 'nodeTimeout'> = {},
): LockManager {
  const url = consensusUrl(urls);
  return url ? new LockManager(url, options) : new LockManager([...urls], { ...options, ...redisOnly });
}
