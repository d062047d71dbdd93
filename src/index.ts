export { LockManager, ManagerClosedError, type LockInfo, type RedisClientInput } from './lock-manager.js';
export type { EtcdClient, EtcdInput } from './etcd/index.js';
export type { ZooKeeperClient, ZooKeeperInput } from './zookeeper/index.js';
export { Lock, LockReleasedError, type ReleaseResult } from './lock.js';
export { Semaphore, type SemaphoreOptions } from './semaphore/index.js';
export { ReadWriteLock } from './rwlock/index.js';
export { scheduleSingleton, type SingletonJob, type SingletonOptions } from './singleton.js';
export {
  LockError,
  InvalidArgumentError,
  MissingPackageError,
  LockTimeoutError,
  QuorumError,
  LockLostError,
  NodeError,
  NodeTimeoutError,
  type NodeFailure,
} from './errors.js';
export type { NodeDataState, NodeView } from './backend.js';
export type {
  AcquiredEvent,
  ExtendedEvent,
  LockEventListener,
  LockEventName,
  LockEvents,
  LostEvent,
  NodeErrorEvent,
  NodeQuarantinedEvent,
  NodeRepairedEvent,
  ReleasedEvent,
  RetryEvent,
} from './events.js';
export {
  DIAGNOSTICS_CHANNELS,
  METER_NAME,
  type AcquireTraceContext,
  type AcquireMethod,
  type AcquireOutcome,
  type ExtensionFailure,
  type HoldOutcome,
  type ObservabilityOptions,
} from './observability/index.js';
export type {
  AcquireOptions,
  WithLockOptions,
  LockManagerOptions,
  RetryOptions,
  RestartQuarantine,
  ResolvedManagerOptions,
  WaitForReplicas,
  ResolvedRetry,
} from './options.js';
