// Uncontended acquire+release on ZooKeeper against the store's floor, in one run on one ensemble: 3 servers,
// every write fsynced (as bench/choosing.ts runs them). The floor is the least any queue lock can do: create
// an ephemeral sequential znode, then delete it (2 writes). fencelock and the floor take turns in blocks, on
// the same server (a follower, as most clients are), so the machine's load weighs on both alike. fencelock
// twice: on one resource again and again (its queue's znode stays), and on a fresh resource every time (its
// queue's znode made with the acquire's, as in W1 of bench/choosing.ts).
// Usage: node --import tsx scripts/zk-floor.ts [pairs, default 1000]
import zookeeper from 'node-zookeeper-client';
import { LockManager } from '../src/index.js';
import { startZooKeeperEnsemble } from '../src/testing/index.js';

const pairs = Number(process.argv[2] ?? 1_000);
const BLOCK = 100;
const ensemble = await startZooKeeperEnsemble({ servers: 3, config: { forceSync: 'yes' } });
try {
  const leader = await ensemble.waitForLeader();
  const server = ensemble.servers.find((s) => s !== leader) ?? leader;
  const hosts = `127.0.0.1:${server.clientPort}`;
  const client = zookeeper.createClient(hosts, { sessionTimeout: 10_000 });
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve());
    client.connect();
  });
  const call = <T>(run: (done: (error: unknown, result?: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => run((error, result) => (error ? reject(error) : resolve(result as T))));
  await call((done) => client.mkdirp('/floor', done));
  const floorPair = async (): Promise<void> => {
    const path = await call<string>((done) =>
      client.create('/floor/n-', Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done),
    );
    await call((done) => client.remove(path, -1, done));
  };
  // What fencelock's recipe sends for an uncontended pair, without fencelock around it: the create and the
  // queue's list sent together (one round trip), then the delete. The protocol's share of the gap.
  const recipePair = async (): Promise<void> => {
    const [path] = await Promise.all([
      call<string>((done) => client.create('/floor/n-', Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done)),
      call((done) => client.getChildren('/floor', done)),
    ]);
    await call((done) => client.remove(path, -1, done));
  };
  // The same on a fresh resource: one transaction makes the queue's znode and ours, and dates them (an empty
  // setData of the queue, whose stat carries the write's zxid); no list: ours is the queue's first child.
  let rawFresh = 0;
  const recipeFreshPair = async (): Promise<void> => {
    const queue = `/floor-fresh-${++rawFresh}`;
    const results = await call<Array<{ path: string }>>((done) =>
      client
        .transaction()
        .create(queue, Buffer.alloc(0), zookeeper.CreateMode.PERSISTENT)
        .create(`${queue}/n-`, Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL)
        .setData(queue, Buffer.alloc(0), -1)
        .commit(done),
    );
    await call((done) => client.remove(results[1]!.path, -1, done));
  };
  const locks = new LockManager(`zk://${hosts}`, { ttl: 10_000 });
  const lockPair = async (): Promise<void> => {
    const lock = await locks.acquire('floor-resource');
    await lock.release();
  };
  let fresh = 0;
  const freshLockPair = async (): Promise<void> => {
    const lock = await locks.acquire(`fresh-${++fresh}`);
    await lock.release();
  };
  const timed = async (pair: () => Promise<void>, into: number[], n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await pair();
      into.push(performance.now() - t0);
    }
  };
  const warm: number[] = [];
  await timed(floorPair, warm, 200);
  await timed(lockPair, warm, 200);
  const floor: number[] = [];
  const fencelock: number[] = [];
  const fencelockFresh: number[] = [];
  const recipe: number[] = [];
  const recipeFresh: number[] = [];
  for (let done = 0; done < pairs; done += BLOCK) {
    await timed(floorPair, floor, Math.min(BLOCK, pairs - done));
    await timed(lockPair, fencelock, Math.min(BLOCK, pairs - done));
    await timed(freshLockPair, fencelockFresh, Math.min(BLOCK, pairs - done));
    await timed(recipePair, recipe, Math.min(BLOCK, pairs - done));
    await timed(recipeFreshPair, recipeFresh, Math.min(BLOCK, pairs - done));
  }
  const p = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
  const row = (name: string, xs: number[]): string =>
    `${name.padEnd(52)} p50 ${p(xs, 0.5).toFixed(2)} ms  p90 ${p(xs, 0.9).toFixed(2)} ms  p99 ${p(xs, 0.99).toFixed(2)} ms`;
  console.log(`${pairs} sequential pairs each, 3 servers, forceSync=yes, client on ${server.name} (a ${await server.mode()})`);
  console.log(row('floor: create eph.-seq. + delete', floor));
  console.log(row('raw: (create, list) + delete', recipe));
  console.log(row('raw, fresh: (queue + create + setData) + delete', recipeFresh));
  console.log(row('fencelock: acquire + release, one resource', fencelock));
  console.log(row('fencelock: the same, a fresh resource each', fencelockFresh));
  const ratio = (xs: number[]): string => `${(p(xs, 0.5) / p(floor, 0.5)).toFixed(2)}x`;
  console.log(`ratio of p50s to the floor: one resource ${ratio(fencelock)}, fresh resources ${ratio(fencelockFresh)}`);
  await locks.close();
  client.close();
} finally {
  await ensemble.stop();
}
