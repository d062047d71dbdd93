// A long-held lock survives restarts (without persistence) of every node, one
// at a time: extension writes the holder's key back on a node that lost its
// data, so the quorum does not decay. And while it is held, nobody else gets it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager, type LockEvents } from '../../src/index.js';
import { keysFor } from '../../src/redis/keys.js';
import { eventually, setup, type Setup } from '../support/harness.js';

let s: Setup;
before(async () => {
  s = await setup(5);
});
after(async () => {
  await s?.close();
});

test('rolling restarts of all 5 nodes under a held lock: never lost, never granted to another, key back on every node', async () => {
  const options = { ttl: 900, nodeTimeout: 100 };
  const holder = new LockManager(s.nodes.urls, options);
  const rival = new LockManager(s.nodes.urls, options);
  const lost: Array<LockEvents['lost'][0]> = [];
  holder.on('lost', (e) => lost.push(e));
  const lockKey = keysFor('fencelock:', 'rolling').lock;
  try {
    const result = await holder.withLock('rolling', async (lock) => {
      for (const node of s.nodes.nodes) {
        await node.restart(); // empty: no persistence
        // Wait for one extension after the restart: it writes our key back on the restarted node.
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('no extension within 2 s of a restart')), 2_000);
          holder.once('extended', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        assert.equal(lock.isValid(), true, `lock valid after restarting ${node.port}`);
        const rivalLock = await rival.tryAcquire('rolling').catch(() => null);
        assert.equal(rivalLock, null, `a rival got the lock after restarting ${node.port}`);
      }
      // The last restart's extension may have run before the client reconnected; the next one writes the key back.
      const owners = (): Promise<Array<string | null>> => Promise.all(s.admin.map((a) => a.get(lockKey).catch(() => null)));
      await eventually(async () => (await owners()).every((o) => o === lock.value), 3_000, 50).catch(() => undefined);
      assert.deepEqual(
        await owners(),
        s.admin.map(() => lock.value),
        'our key is back on every node',
      );
      return lock.signal.aborted;
    });
    assert.equal(result, false, 'signal never aborted during the restarts');
    assert.equal(lost.length, 0, 'no lost event');
  } finally {
    await rival.close();
    await holder.close();
  }
});
