// The floor of a lock on a consensus store: the two writes no lock recipe can do without, one to take the
// lock and one to give it back, each fsynced by a majority, made straight on the store's own client with
// nothing else around them. fencelock's acquire+release pair is measured against it (bench/choosing.ts).
//
//   etcd       put-if-absent of a key on a lease granted once beforehand (a txn comparing its create revision), then delete
//   ZooKeeper  create an ephemeral-sequential znode under a parent created once beforehand, then delete it
import { percentile, round } from './stats.js';

const now = (): number => performance.now();

/** p50 (ms) of `pairs` sequential floor pairs after `warmup` unmeasured ones. */
async function p50Of(pairs: number, warmup: number, pair: (i: number) => Promise<void>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + pairs; i++) {
    const t0 = now();
    await pair(i);
    if (i >= warmup) samples.push(now() - t0);
  }
  return round(percentile(samples, 50), 3) as number;
}

/** etcd at `endpoints` (`http://host:port`): the floor pair's p50 in ms. */
export async function etcdFloor(endpoints: readonly string[], pairs: number, warmup: number): Promise<number> {
  const { Etcd3 } = await import('etcd3');
  const client = new Etcd3({ hosts: [...endpoints] });
  try {
    const lease = await client.leaseClient.leaseGrant({ TTL: 60 });
    const id = String(lease.ID);
    return await p50Of(pairs, warmup, async (i) => {
      const key = Buffer.from(`floor/${i}`);
      await client.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.from('x'), lease: id } }],
        failure: [],
      });
      await client.kv.deleteRange({ key });
    });
  } finally {
    client.close();
  }
}

/** ZooKeeper at `connectionString` (`host:port,…`): the floor pair's p50 in ms. */
export async function zookeeperFloor(connectionString: string, pairs: number, warmup: number): Promise<number> {
  const zk = (await import('node-zookeeper-client')).default;
  const client = zk.createClient(connectionString, { sessionTimeout: 10_000 });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ZooKeeper at ${connectionString}: not connected within 20 s`)), 20_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  const call = <T>(run: (done: (error: unknown, value: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => run((error, value) => (error ? reject(error as Error) : resolve(value))));
  try {
    await call<string>((done) => client.create('/floor', done)).catch(() => undefined); // there already: fine
    return await p50Of(pairs, warmup, async () => {
      const path = await call<string>((done) => client.create('/floor/lock-', zk.CreateMode.EPHEMERAL_SEQUENTIAL, done));
      await call<void>((done) => client.remove(path, -1, done));
    });
  } finally {
    client.close();
  }
}
