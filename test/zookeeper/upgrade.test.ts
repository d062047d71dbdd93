// A rolling upgrade: managers on fencelock 0.1's znode names (`lock-<token>-<seq>`, `read-…`, `write-…`) and
// managers on Curator's names (`_c_<uuid>-lock-<seq>`, …) in one queue still exclude each other, in one FIFO
// order. An old manager is played by hand with the real client: it creates its znode as 0.1 did (ephemeral,
// sequential, named by its token), and decides by 0.1's rules, restated below.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import zookeeper from 'node-zookeeper-client';
import { LockManager, type Lock } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { requireZooKeeper } from '../support/optional.js';

/** fencelock 0.1's rules: children in the order of their last 10 digits; a mutex or writer holds when first, a reader when no `write-…` child is ahead. */
function oldHolds(names: readonly string[], mine: string, kind: 'mutex' | 'read' | 'write'): boolean {
  const seq = (name: string): number => Number(name.slice(-10));
  const ahead = names.filter((n) => /\d{10}$/.test(n) && seq(n) < seq(mine));
  return kind === 'read' ? !ahead.some((n) => n.startsWith('write-')) : ahead.length === 0;
}

/** Settles within `ms`? (a waiter that must stay waiting: false) */
const settlesWithin = (promise: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('zookeeper: a rolling upgrade from fencelock 0.1’s znode names', { skip: requireZooKeeper('ZooKeeper (rolling upgrade)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  let old: zookeeper.Client;
  let locks: LockManager;
  const call = <T>(run: (done: (error: unknown, result?: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => run((error, result) => (error ? reject(error) : resolve(result as T))));
  /** What an old manager does to enqueue: its queue made if missing, then `<kind>-<token>-` ephemeral sequential. Its name. */
  const oldEnqueue = async (queue: string, kind: 'lock' | 'read' | 'write'): Promise<string> => {
    await call((done) => old.mkdirp(queue, done));
    const token = randomBytes(18).toString('hex');
    const path = await call<string>((done) =>
      old.create(`${queue}/${kind}-${token}-`, Buffer.from(token), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done),
    );
    return path.slice(queue.length + 1);
  };
  const oldRelease = (queue: string, name: string): Promise<unknown> => call((done) => old.remove(`${queue}/${name}`, -1, done));
  const children = (queue: string): Promise<string[]> => call((done) => old.getChildren(queue, done));
  const queued = (queue: string, count: number): Promise<void> =>
    eventually(async () => (await children(queue)).length === count, 20_000, 20);

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ servers: 1 });
    old = zookeeper.createClient(ensemble.connectionString, { sessionTimeout: 10_000 });
    old.connect();
    locks = new LockManager(ensemble.url, { ttl: 4_000, acquireTimeout: 20_000 });
  });
  after(async () => {
    await locks?.close();
    old?.close();
    await ensemble?.stop();
  });

  test('mutex: old and new exclude each other both ways, in one FIFO order (old, new, old, new)', async () => {
    const queue = '/fencelock/upgraded';
    const o1 = await oldEnqueue(queue, 'lock');
    assert.ok(oldHolds(await children(queue), o1, 'mutex'), 'the old manager holds');
    assert.equal(await locks.tryAcquire('upgraded'), null, 'a new manager sees the old holder');
    const order: string[] = [];
    const n1 = locks.acquire('upgraded').then((l) => (order.push('new 1'), l));
    await queued(queue, 2);
    const o2 = await oldEnqueue(queue, 'lock');
    const n2 = locks.acquire('upgraded').then((l) => (order.push('new 2'), l));
    await queued(queue, 4);
    assert.ok(!oldHolds(await children(queue), o2, 'mutex'), 'the second old manager waits');
    await oldRelease(queue, o1);
    const first: Lock = await n1;
    assert.ok(!oldHolds(await children(queue), o2, 'mutex'), 'an old manager sees the new holder ahead of it');
    await first.release();
    assert.ok(oldHolds(await children(queue), o2, 'mutex'), 'the old waiter holds next');
    assert.equal(await settlesWithin(n2, 300), false, 'the new waiter behind it still waits');
    await oldRelease(queue, o2);
    const second = await n2;
    assert.deepEqual(order, ['new 1', 'new 2']);
    assert.ok(second.fence > first.fence);
    await second.release();
  });

  test('read-write lock: an old reader sees a new writer, a new reader and writer see an old writer, readers share', async () => {
    const queue = '/fencelock/rwlock:upgraded';
    const rw = locks.readWriteLock('upgraded');
    // A new writer, then an old reader: the old reader knows the new writer's name for a writer's.
    const writer = await rw.write();
    const oldReader = await oldEnqueue(queue, 'read');
    assert.ok(!oldHolds(await children(queue), oldReader, 'read'), 'the old reader waits for the new writer');
    await writer.release();
    assert.ok(oldHolds(await children(queue), oldReader, 'read'), 'then reads');
    // An old reader holds: a new reader shares, a new writer waits.
    const sharing = await rw.tryRead();
    assert.ok(sharing, 'a new reader shares with the old one');
    await sharing.release();
    assert.equal(await rw.tryWrite(), null, 'a new writer waits for the old reader');
    await oldRelease(queue, oldReader);
    // An old writer holds: new readers and writers wait.
    const oldWriter = await oldEnqueue(queue, 'write');
    assert.ok(oldHolds(await children(queue), oldWriter, 'write'));
    assert.equal(await rw.tryRead(), null, 'a new reader waits for the old writer');
    assert.equal(await rw.tryWrite(), null, 'a new writer waits for the old writer');
    const reading = rw.read();
    await queued(queue, 2);
    await oldRelease(queue, oldWriter);
    await (await reading).release();
  });
});
