// fencelock and Apache Curator 5.4 (Debian's jars, driven by test/zookeeper/curator/CuratorLock.java) on one
// ZooKeeper server: a lock of one is a lock of the other, on the paths docs/zookeeper.md maps (keyPrefix
// `locks:`: mutex `R` is `/locks/R`, read-write lock `R` is `/locks/rwlock:R`). Both directions, one FIFO
// queue, the read-write lock both ways, and a fencelock holder SIGKILLed with a Curator waiter behind it.
// "Curator does not get it" is checked with Curator's own acquire(timeout) returning false (500 ms: before
// fencelock used Curator's names, Curator took a held lock within 100 ms).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import zookeeper from 'node-zookeeper-client';
import { LockManager, type Lock } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { startLeaseHolder } from '../support/child.js';
import {
  compileCuratorLock,
  requireCurator,
  startCuratorLock,
  type CompiledCuratorLock,
  type CuratorLockProcess,
} from '../support/curator.js';
import { eventually } from '../support/harness.js';
import { requireZooKeeper } from '../support/optional.js';

const skip = requireZooKeeper('ZooKeeper (Curator interop)') || requireCurator('javac and Apache Curator (Curator interop)');

test('docs/zookeeper.md shows the Java program the tests run: every line of its excerpt is in CuratorLock.java', () => {
  const doc = readFileSync('docs/zookeeper.md', 'utf8');
  const excerpt = /```java\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(excerpt, 'a java block in docs/zookeeper.md');
  const source = readFileSync('test/zookeeper/curator/CuratorLock.java', 'utf8');
  const lines = excerpt.split('\n').filter((l) => l.trim() !== '' && l.trim() !== '…');
  assert.ok(lines.length >= 8);
  for (const line of lines) assert.ok(source.includes(line), `not in CuratorLock.java: ${line}`);
});

describe('zookeeper: shared with Curator’s InterProcessMutex and InterProcessReadWriteLock', { skip }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  let compiled: CompiledCuratorLock;
  let admin: zookeeper.Client;
  const managers: LockManager[] = [];
  const javas: CuratorLockProcess[] = [];
  const manager = (ttl = 4_000): LockManager => {
    const m = new LockManager(ensemble.url, { ttl, acquireTimeout: 20_000, keyPrefix: 'locks:' });
    managers.push(m);
    return m;
  };
  const curator = async (path: string, kind: 'mutex' | 'read' | 'write'): Promise<CuratorLockProcess> => {
    const java = await startCuratorLock(compiled, ensemble.connectionString, path, kind);
    javas.push(java);
    return java;
  };
  /** The queue's children, read by a client of our own. */
  const children = (path: string): Promise<string[]> =>
    new Promise((resolve, reject) =>
      admin.getChildren(path, (error, names) => {
        if (error && (error as { getCode?: () => number }).getCode?.() === zookeeper.Exception.NO_NODE) resolve([]);
        else if (error) reject(error);
        else resolve(names);
      }),
    );
  /** Until `count` holds and waiters are in the queue (a waiter is queued once its znode is there). */
  const queued = (path: string, count: number): Promise<void> =>
    eventually(async () => (await children(path)).length === count, 20_000, 20);

  /** Curator prints nothing for 300 ms: it is still waiting (before fencelock used Curator's names, it took a held lock within 100 ms). */
  const stillWaiting = (java: CuratorLockProcess): Promise<void> =>
    assert.rejects(java.next(300), /printed no line/, 'Curator still waits while fencelock holds the lock');

  before(async () => {
    [ensemble, compiled] = await Promise.all([startZooKeeperEnsemble({ servers: 1 }), compileCuratorLock()]);
    admin = zookeeper.createClient(ensemble.connectionString);
    admin.connect();
  });
  after(async () => {
    await Promise.all(javas.map((j) => j.stop()));
    await Promise.all(managers.map((m) => m.close()));
    admin?.close();
    compiled?.remove();
    await ensemble?.stop();
  });

  test('mutex, both directions: a fencelock holder keeps Curator out, a Curator holder keeps fencelock out', async () => {
    const locks = manager();
    const path = '/locks/both-ways';
    const java = await curator(path, 'mutex');
    const held = await locks.acquire('both-ways');
    java.send('acquire 500');
    assert.equal(await java.next(), 'timeout', 'Curator does not get a lock fencelock holds');
    // Curator waits behind fencelock, and gets the lock when fencelock releases it.
    java.send('acquire 20000');
    await queued(path, 2);
    await held.release();
    assert.equal(await java.next(), 'acquired');
    const names = await children(path);
    assert.equal(names.length, 1);
    assert.match(names[0]!, /^_c_[0-9a-f-]{36}-lock-\d{10}$/, 'Curator’s protected name');
    // fencelock waits behind Curator, and gets the lock when Curator releases it.
    assert.equal(await locks.tryAcquire('both-ways'), null, 'fencelock does not get a lock Curator holds');
    const waiting = locks.acquire('both-ways');
    await queued(path, 2);
    java.send('release');
    assert.equal(await java.next(), 'released');
    const next = await waiting;
    assert.ok(next.fence > held.fence, `fences ${held.fence}, then ${next.fence}`);
    await next.release();
  });

  test('one FIFO queue: a fencelock holder, then a Curator waiter, then a fencelock waiter are served in that order', async () => {
    const [a, b] = [manager(), manager()];
    const path = '/locks/fifo';
    const java = await curator(path, 'mutex');
    const order: string[] = [];
    const first = await a.acquire('fifo');
    java.send('acquire 20000');
    await queued(path, 2);
    const third = b.acquire('fifo').then((lock) => (order.push('fencelock waiter'), lock));
    await queued(path, 3);
    await stillWaiting(java);
    await first.release();
    assert.equal(await java.next(), 'acquired');
    order.push('Curator waiter');
    // The fencelock waiter is still in line behind Curator: its znode and Curator's are the queue.
    assert.equal((await children(path)).length, 2);
    assert.deepEqual(order, ['Curator waiter']);
    java.send('release');
    assert.equal(await java.next(), 'released');
    const last: Lock = await third;
    assert.deepEqual(order, ['Curator waiter', 'fencelock waiter']);
    assert.ok(last.fence > first.fence);
    await last.release();
  });

  test('read-write lock: a fencelock writer keeps a Curator reader out, and a Curator reader keeps a fencelock writer out', async () => {
    const locks = manager();
    const rw = locks.readWriteLock('doc');
    const path = '/locks/rwlock:doc';
    const reader = await curator(path, 'read');
    const writer = await rw.write();
    reader.send('acquire 500');
    assert.equal(await reader.next(), 'timeout', 'Curator reads nothing while fencelock writes');
    reader.send('acquire 20000');
    await queued(path, 2);
    await writer.release();
    assert.equal(await reader.next(), 'acquired');
    // Curator reads: fencelock may read too, not write.
    assert.equal(await rw.tryWrite(), null, 'fencelock does not write while Curator reads');
    const alsoReading = await rw.tryRead();
    assert.ok(alsoReading, 'readers share');
    await alsoReading.release();
    const waitingWriter = rw.write();
    await queued(path, 2);
    reader.send('release');
    assert.equal(await reader.next(), 'released');
    await (await waitingWriter).release();
  });

  test('read-write lock: a Curator writer keeps a fencelock reader out, and a fencelock reader keeps a Curator writer out', async () => {
    const locks = manager();
    const rw = locks.readWriteLock('ledger');
    const path = '/locks/rwlock:ledger';
    const writer = await curator(path, 'write');
    writer.send('acquire 20000');
    assert.equal(await writer.next(), 'acquired');
    assert.equal(await rw.tryRead(), null, 'fencelock reads nothing while Curator writes');
    const waitingReader = rw.read();
    await queued(path, 2);
    writer.send('release');
    assert.equal(await writer.next(), 'released');
    const reading = await waitingReader;
    writer.send('acquire 500');
    assert.equal(await writer.next(), 'timeout', 'Curator does not write while fencelock reads');
    writer.send('acquire 20000');
    await queued(path, 2);
    await reading.release();
    assert.equal(await writer.next(), 'acquired');
    writer.send('release');
    assert.equal(await writer.next(), 'released');
  });

  test('a fencelock holder SIGKILLed: the Curator waiter gets the lock once the holder’s session ends', async (t) => {
    const resource = 'killed-holder';
    // test/fixtures/lease-holder.ts holds it with the default keyPrefix, `fencelock:`, and a 2 s session.
    const path = `/fencelock/${resource}`;
    const holder = startLeaseHolder(ensemble.url, resource);
    const java = await curator(path, 'mutex');
    try {
      await holder.fence();
      java.send('acquire 20000');
      await queued(path, 2);
      await stillWaiting(java);
      holder.child.kill('SIGKILL'); // no release, no session close: the server ends the session at its timeout (2 s)
      await holder.exited;
      const killedAt = performance.now();
      assert.equal(await java.next(), 'acquired');
      const took = performance.now() - killedAt;
      t.diagnostic(`Curator got the lock ${Math.round(took)} ms after the fencelock holder's SIGKILL (session timeout 2 s)`);
      // The session's timeout, plus a tick of the server's session clock and this loaded machine's scheduling.
      assert.ok(took < 2_000 + 1_500, `${Math.round(took)} ms`);
      java.send('release');
      assert.equal(await java.next(), 'released');
    } finally {
      if (holder.child.exitCode === null) holder.child.kill('SIGKILL');
    }
  });
});
