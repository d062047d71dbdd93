// The floor of a lock on a consensus store: the two writes no lock recipe can do without, one to take the
// lock and one to give it back, each fsynced by a majority, made straight on the store's own client with
// nothing else around them. fencelock's acquire+release pair is measured against it (bench/choosing.ts).
//
//   etcd       put-if-absent of a key on a lease granted once beforehand (a txn comparing its create revision), then delete
//   ZooKeeper  create an ephemeral-sequential znode under a parent created once beforehand, then delete it
import net from 'node:net';
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

/**
 * ZooKeeper at `connectionString` (`host:port,…`): the floor pair's p50 in ms, on the server fencelock's
 * manager is connected to. A write costs less on the leader than through a follower (one hop fewer: 1.45 ms
 * against 1.61 ms in one run), and a client picks its server at random, so a floor measured on another
 * server than fencelock's would put that difference into the ratio.
 */
export async function zookeeperFloor(connectionString: string, pairs: number, warmup: number): Promise<number> {
  const zk = (await import('node-zookeeper-client')).default;
  const client = zk.createClient((await serverWithASession(connectionString)) ?? connectionString, { sessionTimeout: 10_000 });
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

/**
 * The first server of `connectionString` with a client session on it (its `cons` four-letter word lists a
 * connection with a session id: the manager's), or undefined when none has one or none answers.
 */
async function serverWithASession(connectionString: string): Promise<string | undefined> {
  for (const server of connectionString.split(',')) {
    const [host, port] = server.split(':');
    const connections = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      const socket = net.connect({ host: host!, port: Number(port) }, () => socket.end('cons'));
      const timer = setTimeout(() => socket.destroy(), 2_000);
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      socket.on('error', () => undefined); // resolved by 'close', with what came
    });
    if (/sid=0x[0-9a-f]*[1-9a-f]/.test(connections)) return server;
  }
  return undefined;
}
