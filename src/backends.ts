// Which store the user gave the manager: an etcd3 client or an etcd:// URL means etcd, a node-zookeeper-client
// client or a zk:// URL ZooKeeper, anything else is taken as a list of Redis clients (the Redis backend validates it). The only place that tells them apart.
import type { Backend, BackendHost } from './backend.js';
import { EtcdBackend, isEtcdInput } from './etcd/index.js';
import type { LockManagerOptions, ResolvedManagerOptions } from './options.js';
import type { OptionalPackage } from './optional-package.js';
import { RedisBackend, type RedisTelemetry } from './redis/backend.js';
import { isZooKeeperInput, ZooKeeperBackend } from './zookeeper/index.js';

/** Whether `input` is Redis nodes, called one by one (each call bounded by nodeTimeout), rather than a consensus store. */
export const isRedisInput = (input: unknown): boolean => !isEtcdInput(input) && !isZooKeeperInput(input);

export function createBackend(
  input: unknown,
  given: LockManagerOptions | undefined,
  options: ResolvedManagerOptions,
  host: BackendHost,
  telemetry: RedisTelemetry,
): Backend {
  if (isEtcdInput(input)) return new EtcdBackend(input, given, options, host);
  if (isZooKeeperInput(input)) return new ZooKeeperBackend(input, given, options, host);
  return new RedisBackend(input, options, host, telemetry);
}

/** The client library a URL in `input` makes the manager load itself, and the URL (for the message); none for clients. */
export function packageFor(input: unknown): { name: OptionalPackage; neededBy: string } | undefined {
  if (typeof input === 'string' && isEtcdInput(input)) return { name: 'etcd3', neededBy: input };
  if (typeof input === 'string' && isZooKeeperInput(input)) return { name: 'node-zookeeper-client', neededBy: input };
  const url = Array.isArray(input) ? input.find((c) => typeof c === 'string') : undefined;
  return typeof url === 'string' ? { name: 'ioredis', neededBy: url } : undefined;
}
