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
   * `work`, done again when the server left a request of `locks` unanswered within the request timeout (2 s)
   * while it ran: a `NODE_TIMEOUT` node error (the recipe then retries, and writes more; a single attempt fails),
   * or a release that resolved with `released: 0` (it deletes in the background, recipe.ts removeForSure). Such a
   * run measures the server's stall, not the recipe: it is said (with the server's own warnings: ZooKeeper logs
   * an fsync slower than 1 s), and once the log is still, `work` runs again, at most twice more. Seen in loaded
   * full suite runs only (twice for a release in CI; on 2026-11-28 once for an acquire's create, 7 writes where 2
   * were due, and once for a tryAcquire, while other files started ZooKeeper ensembles beside this one; on 2026-11-29
   * once for the pair without a root, 5 writes where 4 were due, in 2,040 ms, before that test went through here), never in
   * runs of this file alone. `work` gets the attempt's number and returns its result and whether its release
   * was answered.
   */
  async function unstalled<T>(
    t: TestContext,
    locks: LockManager,
    what: string,
    work: (attempt: number) => Promise<{ result: T; answered: boolean }>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let stalls = 0;
      const stalled = ({ error }: { error: Error & { code?: string } }): void => {
        if (error.code === 'NODE_TIMEOUT') stalls++;
      };
      locks.on('nodeError', stalled);
      let outcome: { result: T; answered: boolean } | undefined;
      let failure: unknown;
      try {
        outcome = await work(attempt);
      } catch (error) {
        failure = error;
      } finally {
        locks.off('nodeError', stalled);
      }
      if ((stalls === 0 && outcome?.answered !== false) || attempt === 2) {
        if (!outcome) throw failure;
        assert.ok(outcome.answered, `${what}: the release was answered in ${attempt + 1} tries`);
        return outcome.result;
      }
      const log = await readFile(path.join(ensemble.servers[0]!.dir, 'zookeeper.log'), 'utf8').catch(() => '');
      const warnings = log.split('\n').filter((line) => /fsync|took|GC|pause/i.test(line));
      t.diagnostic(
        `${what}: a request went unanswered within the request timeout; server warnings: ${warnings.slice(-5).join(' | ') || 'none'}`,
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

  /**
   * The writes of one pair the server answered in time (see unstalled). A fresh resource is measured again
   * under a new name: the stalled pair may have made its queue.
   */
  function answeredPairWrites(t: TestContext, locks: LockManager, resource: string | string[], fresh = false): Promise<number> {
    const renamed = (r: string, attempt: number): string => (fresh && attempt > 0 ? `${r}-again-${attempt}` : r);
    return unstalled(t, locks, String(resource), async (attempt) => {
      const name = typeof resource === 'string' ? renamed(resource, attempt) : resource.map((r) => renamed(r, attempt));
      return pairWrites(locks, name);
    });
  }

  /** The writes of one acquire+release of `resource`, and whether its release was answered (unstalled). */
  async function pairWrites(locks: LockManager, resource: string | string[]): Promise<{ result: number; answered: boolean }> {
    let released = 0;
    const result = await writesOf(async () => {
      ({ released } = await (await locks.acquire(resource)).release());
    });
    return { result, answered: released === 1 };
  }

  test('a fresh resource and a busy one alike: 2 writes per pair (the floor: create, delete)', async (t) => {
    const locks = manager('fresh:');
    await pair(locks, 'warm-up')(); // the session (a write) and the root
    for (let i = 0; i < 5; i++) assert.equal(await answeredPairWrites(t, locks, `fresh-${i}`, true), 2, `fresh resource ${i}`);
    for (let i = 0; i < 5; i++) assert.equal(await answeredPairWrites(t, locks, 'fresh-0'), 2, `known resource, pair ${i}`);
    // Three fresh resources at once: one transaction makes their queues and our znodes; one delete each.
    assert.equal(await answeredPairWrites(t, locks, ['multi-a', 'multi-b', 'multi-c'], true), 4);
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

  test('a queue another client made: one failed transaction, then the plain create; known from then on', async (t) => {
    const locks = manager('others:');
    await pair(locks, 'warm-up')();
    // After a stall (see unstalled) the stalled pair may have learnt of the queue: the next try is on another one.
    let theirs = 'theirs';
    const first = await unstalled(t, locks, 'a pair on a queue another client made', async (attempt) => {
      theirs = attempt === 0 ? 'theirs' : `theirs-again-${attempt}`;
      await call((done) => client.create(`/others/${theirs}`, done));
      return pairWrites(locks, theirs);
    });
    assert.equal(first, 3);
    assert.equal(await answeredPairWrites(t, locks, theirs), 2);
  });

  test('a known queue deleted under the manager (as another manager’s sweep does): one failed create, then the transaction; granted each time', async (t) => {
    const locks = manager('swept:');
    await pair(locks, 'swept')();
    /** The queue deleted, then `work`. After a stall (attempt > 0) the queue may be gone already: a stalled attempt may not have made it. */
    const afterDeletion = async <T>(attempt: number, work: () => Promise<T>): Promise<T> => {
      const removed = call((done) => client.remove('/swept/swept', -1, done));
      await (attempt === 0 ? removed : removed.catch(() => undefined));
      return work();
    };
    for (let i = 0; i < 3; i++) {
      const lock = await unstalled(t, locks, `tryAcquire after deletion ${i}`, (attempt) =>
        afterDeletion(attempt, async () => {
          const taken = await locks.tryAcquire('swept');
          return { result: taken, answered: taken ? (await taken.release()).released === 1 : true };
        }),
      );
      assert.ok(lock, `granted after deletion ${i}`);
    }
    const writes = await unstalled(t, locks, 'a pair after deletion', (attempt) =>
      afterDeletion(attempt, () => pairWrites(locks, 'swept')),
    );
    assert.equal(writes, 3);
  });

  test('the root missing: made, then the queue with our znode; the next fresh resource costs 2 again', async (t) => {
    const locks = manager('rootless:');
    await pair(locks, 'warm-up')();
    // The root and its (empty) queues are deleted before each try: a stalled try (see unstalled) may have made
    // them again. Each try is on a fresh resource.
    const first = await unstalled(t, locks, 'a fresh resource without the root', async (attempt) => {
      // Not there after a try that stalled before it made the root.
      const gone = (error: unknown): boolean => (error as { getCode?: () => number } | null)?.getCode?.() === zookeeper.Exception.NO_NODE;
      const queues = await new Promise<string[]>((resolve, reject) =>
        client.getChildren('/rootless', (error, names) => (error && !gone(error) ? reject(error as Error) : resolve(names ?? []))),
      );
      for (const queue of queues) await call((done) => client.remove(`/rootless/${queue}`, -1, done));
      await call((done) => client.remove('/rootless', -1, (error) => done(gone(error) && attempt > 0 ? null : error)));
      return pairWrites(locks, attempt === 0 ? 'first' : `first-again-${attempt}`);
    });
    // A failed transaction (no root), the root, the transaction, the delete.
    assert.equal(first, 4);
    assert.equal(await answeredPairWrites(t, locks, 'second', true), 2);
  });
});
