// Semaphore permits and read-write lock holds survive rolling restarts (without persistence) of every
// node, as the mutex does (rolling-restart.test.ts): extension writes the hold back on a node that lost
// its data, unless that would break the primitive's rule there. And while it is held, no rival gets in.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager, type Lock, type LockEvents } from '../../src/index.js';
import { eventually, setup, type Setup } from '../support/harness.js';

let s: Setup;
before(async () => {
  s = await setup(5);
});
after(async () => {
  await s?.close();
});

const OPTIONS = { ttl: 900, nodeTimeout: 100 };

/**
 * Holds through `run` while every node is restarted empty, one at a time, waiting for an extension after
 * each; checks the hold stays valid and `rivalGetsIn` stays false; returns whether the hold is back on every node.
 */
async function throughRollingRestarts(
  holder: LockManager,
  hold: (fn: (lock: Lock) => Promise<boolean>) => Promise<boolean>,
  rivalGetsIn: () => Promise<boolean>,
  onEveryNode: (lock: Lock) => Promise<boolean>,
): Promise<void> {
  const lost: Array<LockEvents['lost'][0]> = [];
  holder.on('lost', (e) => lost.push(e));
  const aborted = await hold(async (lock) => {
    for (const node of s.nodes.nodes) {
      await node.restart();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no extension within 2 s of a restart')), 2_000);
        holder.once('extended', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      assert.equal(lock.isValid(), true, `hold valid after restarting ${node.port}`);
      assert.equal(await rivalGetsIn(), false, `a rival got in after restarting ${node.port}`);
    }
    // The last restart's extension may have run before the client reconnected; the next one writes the hold back.
    await eventually(() => onEveryNode(lock), 3_000, 50).catch(() => undefined);
    assert.equal(await onEveryNode(lock), true, 'the hold is back on every node');
    return lock.signal.aborted;
  });
  assert.equal(aborted, false, 'signal never aborted during the restarts');
  assert.equal(lost.length, 0, 'no lost event');
}

const members = (key: string): Promise<string[][]> =>
  Promise.all(s.admin.map((a) => (a.call('ZRANGE', key, '0', '-1') as Promise<string[]>).catch(() => [] as string[])));

test('a semaphore permit survives rolling restarts of all 5 nodes; its slot is not given to a rival', async () => {
  const holder = new LockManager(s.nodes.urls, OPTIONS);
  const rival = new LockManager(s.nodes.urls, OPTIONS);
  try {
    await throughRollingRestarts(
      holder,
      (fn) => holder.semaphore('rolling-sem', { limit: 1 }).withPermit(fn),
      async () => {
        const permit = await rival
          .semaphore('rolling-sem', { limit: 1 })
          .tryAcquire()
          .catch(() => null);
        await permit?.release();
        return permit !== null;
      },
      async (lock) => (await members('fencelock:{rolling-sem}:permits')).every((m) => m.some((x) => x.endsWith(`:${lock.value}`))),
    );
  } finally {
    await rival.close();
    await holder.close();
  }
});

test('a write hold survives rolling restarts; no reader gets in', async () => {
  const holder = new LockManager(s.nodes.urls, OPTIONS);
  const rival = new LockManager(s.nodes.urls, OPTIONS);
  try {
    await throughRollingRestarts(
      holder,
      (fn) => holder.readWriteLock('rolling-rw').withWrite(fn),
      async () => {
        const read = await rival
          .readWriteLock('rolling-rw')
          .tryRead()
          .catch(() => null);
        await read?.release();
        return read !== null;
      },
      async (lock) =>
        (await Promise.all(s.admin.map((a) => a.get('fencelock:{rolling-rw}:writer').catch(() => null)))).every((v) => v === lock.value),
    );
  } finally {
    await rival.close();
    await holder.close();
  }
});

test('a read hold survives rolling restarts; no writer gets in', async () => {
  const holder = new LockManager(s.nodes.urls, OPTIONS);
  const rival = new LockManager(s.nodes.urls, OPTIONS);
  try {
    await throughRollingRestarts(
      holder,
      (fn) => holder.readWriteLock('rolling-rd').withRead(fn),
      async () => {
        const write = await rival
          .readWriteLock('rolling-rd')
          .tryWrite()
          .catch(() => null);
        await write?.release();
        return write !== null;
      },
      async (lock) => (await members('fencelock:{rolling-rd}:readers')).every((m) => m.includes(lock.value)),
    );
  } finally {
    await rival.close();
    await holder.close();
  }
});
