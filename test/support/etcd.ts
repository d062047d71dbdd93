// A one-member etcd cluster for one describe block: started before its tests, stopped after them with every
// manager made through it closed first, and an etcd3 client beside fencelock's to look at what is stored.
import { after, before } from 'node:test';
import { Etcd3 } from 'etcd3';
import { LockManager } from '../../src/index.js';
import { startEtcdCluster, type LocalEtcdCluster } from '../../src/testing/index.js';

type ManagerOptions = NonNullable<ConstructorParameters<typeof LockManager>[1]>;

export interface OneMemberEtcd {
  readonly cluster: LocalEtcdCluster;
  readonly client: Etcd3;
  /** a manager on the cluster with this ttl and a 10 s acquire timeout (unless `options` say), closed after the block */
  manager(ttl?: number, options?: ManagerOptions): LockManager;
}

/** Call inside a describe: registers its before/after hooks and returns the cluster's handles. */
export function oneMemberEtcd(defaultTtl: number): OneMemberEtcd {
  let cluster: LocalEtcdCluster | undefined;
  let client: Etcd3 | undefined;
  const managers: LockManager[] = [];
  before(async () => {
    cluster = await startEtcdCluster({ members: 1 });
    client = new Etcd3({ hosts: cluster.endpoints });
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    client?.close();
    await cluster?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the etcd cluster is not started yet (use it inside a test)');
    return value;
  };
  return {
    get cluster() {
      return started(cluster);
    },
    get client() {
      return started(client);
    },
    manager(ttl = defaultTtl, options = {}) {
      const m = new LockManager(started(cluster).url, { ttl, acquireTimeout: 10_000, ...options });
      managers.push(m);
      return m;
    },
  };
}
