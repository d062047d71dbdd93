// What an uncontended acquire+release costs the ensemble, counted in its log: every write ZooKeeper orders,
// a failed create or transaction included, takes one zxid, and `srvr` reports the last one. The floor of any
// queue lock is 2 (create our znode, delete it): met on a fresh resource too, whose queue is made with our
// znode in one transaction, and a wrong guess about a queue (made by another manager, or deleted by a sweep)
// costs one write more, once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import { LockManager } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { requireZooKeeper } from '../support/optional.js';

describe('zookeeper: the writes of an uncontended acquire+release', { skip: requireZooKeeper('ZooKeeper (writes per pair)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  let client: zookeeper.Client;
  const managers: LockManager[] = [];
  // ttl 20 s: the manager's first sweep comes after the test, and writes nothing in it.
  const manager = (keyPrefix: string): LockManager => {
    const m = new LockManager(ensemble.url, { ttl: 20_000, keyPrefix });
    managers.push(m);
    return m;
  };
  /** The last zxid the (one) server has applied. */
  async function lastZxid(): Promise<bigint> {
    const answer = await ensemble.servers[0]!.command('srvr');
    const zxid = /^Zxid: (0x[0-9a-f]+)/m.exec(answer ?? '')?.[1];
    assert.ok(zxid, `srvr answered with a zxid: ${answer}`);
    return BigInt(zxid);
  }
  /** How many writes ZooKeeper logged while `work` ran. */
  async function writesOf(work: () => Promise<void>): Promise<number> {
    const before = await lastZxid();
    await work();
    return Number((await lastZxid()) - before);
  }
  const pair = (locks: LockManager, resource: string | string[]) => async (): Promise<void> => {
    await (await locks.acquire(resource)).release();
  };
  const call = (run: (done: (error: unknown) => void) => void): Promise<void> =>
    new Promise((resolve, reject) => run((error) => (error ? reject(error as Error) : resolve())));

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ servers: 1 });
    client = zookeeper.createClient(ensemble.connectionString);
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    client?.close();
    await ensemble?.stop();
  });

  test('a fresh resource and a busy one alike: 2 writes per pair (the floor: create, delete)', async () => {
    const locks = manager('fresh:');
    await pair(locks, 'warm-up')(); // the session (a write) and the root
    for (let i = 0; i < 5; i++) assert.equal(await writesOf(pair(locks, `fresh-${i}`)), 2, `fresh resource ${i}`);
    for (let i = 0; i < 5; i++) assert.equal(await writesOf(pair(locks, 'fresh-0')), 2, `known resource, pair ${i}`);
    // Three fresh resources at once: one transaction makes their queues and our znodes; one delete each.
    assert.equal(await writesOf(pair(locks, ['multi-a', 'multi-b', 'multi-c'])), 4);
    assert.equal(await writesOf(pair(locks, ['multi-a', 'multi-b', 'multi-c'])), 4);
  });

  test('a holder that made its queue takes that write’s zxid as its fence, without a look; the waiter behind it gets a greater one', async () => {
    const locks = manager('dated:');
    await pair(locks, 'warm-up')();
    const holder = await locks.acquire('dated');
    const stat = await new Promise<zookeeper.Stat>((resolve, reject) =>
      client.exists('/dated/dated', (error, found) => (error ? reject(error as Error) : resolve(found))),
    );
    assert.equal(holder.fence, stat.czxid.readBigInt64BE(0), 'the zxid of the transaction that made the queue');
    const waiting = locks.acquire('dated');
    // The waiter's znode is in the queue before the holder lets go (its create is logged: one more zxid).
    const childrenOf = (): Promise<string[]> =>
      new Promise((resolve, reject) =>
        client.getChildren('/dated/dated', (error, names) => (error ? reject(error as Error) : resolve(names))),
      );
    await eventually(async () => (await childrenOf()).length === 2, 5_000, 20);
    await holder.release();
    const next = await waiting;
    assert.ok(next.fence > holder.fence, `fences ${holder.fence}, ${next.fence}`);
    await next.release();
    const again = await locks.acquire('dated');
    assert.ok(again.fence > next.fence, `fences ${next.fence}, ${again.fence}`);
    await again.release();
  });

  test('a queue another client made: one failed transaction, then the plain create; known from then on', async () => {
    const locks = manager('others:');
    await pair(locks, 'warm-up')();
    await call((done) => client.create('/others/theirs', done));
    assert.equal(await writesOf(pair(locks, 'theirs')), 3);
    assert.equal(await writesOf(pair(locks, 'theirs')), 2);
  });

  test('a known queue deleted under the manager (as another manager’s sweep does): one failed create, then the transaction; granted each time', async () => {
    const locks = manager('swept:');
    await pair(locks, 'swept')();
    for (let i = 0; i < 3; i++) {
      await call((done) => client.remove('/swept/swept', -1, done));
      const lock = await locks.tryAcquire('swept');
      assert.ok(lock, `granted after deletion ${i}`);
      await lock.release();
    }
    await call((done) => client.remove('/swept/swept', -1, done));
    assert.equal(await writesOf(pair(locks, 'swept')), 3);
  });

  test('the root missing: made, then the queue with our znode; the next fresh resource costs 2 again', async () => {
    const locks = manager('rootless:');
    await pair(locks, 'warm-up')();
    await call((done) => client.remove('/rootless/warm-up', -1, done));
    await call((done) => client.remove('/rootless', -1, done));
    // A failed transaction (no root), the root, the transaction, the delete.
    assert.equal(await writesOf(pair(locks, 'first')), 4);
    assert.equal(await writesOf(pair(locks, 'second')), 2);
  });
});
