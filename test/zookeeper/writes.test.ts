// What an uncontended acquire+release costs the ensemble, counted in its log: every write ZooKeeper orders,
// a failed create or transaction included, takes one zxid, and `srvr` reports the last one. The floor of any
// queue lock is 2 (create our znode, delete it): met on a fresh resource too, whose queue is made with our
// znode in one transaction, and a wrong guess about a queue (made by another manager, or deleted by a sweep)
// costs one write more, once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
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

  /**
   * The writes of one answered pair. A release whose delete the server did not answer within the request
   * timeout (2 s) resolves with `released: 0` and deletes in the background (recipe.ts removeForSure): that
   * pair measures the server's stall, not the recipe. Twice in CI (never in 100 runs here, with or without
   * fsync-heavy load beside it) one delete of this test went unanswered for 2 s by a healthy local server; so
   * such a pair is said (with the server's own warnings: ZooKeeper logs an fsync slower than 1 s) and, once
   * the background delete has landed and the log is still, measured again, at most twice. The other tests
   * here measure a first pair whose cost a repeat would not have, so they stay single measurements.
   */
  async function answeredPairWrites(t: TestContext, locks: LockManager, resource: string | string[]): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      let released = 0;
      const writes = await writesOf(async () => {
        ({ released } = await (await locks.acquire(resource)).release());
      });
      if (released === 1 || attempt === 2) {
        assert.equal(released, 1, `the release of ${String(resource)} was answered in ${attempt + 1} tries`);
        return writes;
      }
      const log = await readFile(path.join(ensemble.servers[0]!.dir, 'zookeeper.log'), 'utf8').catch(() => '');
      const warnings = log.split('\n').filter((line) => /fsync|took|GC|pause/i.test(line));
      t.diagnostic(
        `${String(resource)}: the delete went unanswered within the request timeout; server warnings: ${warnings.slice(-5).join(' | ') || 'none'}`,
      );
      let last = -1n;
      await eventually(
        async () => {
          const zxid = await lastZxid();
          const still = zxid === last;
          last = zxid;
          return still;
        },
        10_000,
        300,
      );
    }
  }

  test('a fresh resource and a busy one alike: 2 writes per pair (the floor: create, delete)', async (t) => {
    const locks = manager('fresh:');
    await pair(locks, 'warm-up')(); // the session (a write) and the root
    for (let i = 0; i < 5; i++) assert.equal(await answeredPairWrites(t, locks, `fresh-${i}`), 2, `fresh resource ${i}`);
    for (let i = 0; i < 5; i++) assert.equal(await answeredPairWrites(t, locks, 'fresh-0'), 2, `known resource, pair ${i}`);
    // Three fresh resources at once: one transaction makes their queues and our znodes; one delete each.
    assert.equal(await answeredPairWrites(t, locks, ['multi-a', 'multi-b', 'multi-c']), 4);
    assert.equal(await answeredPairWrites(t, locks, ['multi-a', 'multi-b', 'multi-c']), 4);
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
