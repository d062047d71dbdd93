// close() while an acquire's first round is on its way: the caller's acquire rejects at once (ManagerClosedError),
// and a lock that round wins after all is released before close() resolves, not left on the nodes for its ttl.
// The acquire script is held back in each node's client (fixtures/held-back.ts), so its reply comes after
// close() was called by construction.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, ManagerClosedError } from '../../src/index.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { scripts } from '../../src/redis/scripts/index.js';
import { within } from '../lock-manager/helpers.js';
import { holdBack } from './fixtures/held-back.js';

const HELD_BACK_MS = 150;
const LOCK = (resource: string): string => `fencelock:{${resource}}:lock`;

for (const [count, call] of [
  [1, 'acquire'],
  [3, 'acquire'],
  [1, 'tryAcquire'],
  [3, 'tryAcquire'],
] as const) {
  describe(`close() during ${call}'s first round (${count} node${count === 1 ? '' : 's'})`, () => {
    test('the call rejects at once; a lock the round wins after all is released before close() resolves', async () => {
      const nodes = await startRedisNodes(count);
      const clients = nodes.urls.map((url) => new Redis(url));
      const admin = nodes.urls.map((url) => new Redis(url));
      const locks = new LockManager(clients, { ttl: 60_000, nodeTimeout: 2_000 });
      try {
        await (await locks.acquire('warm-up')).release();
        const held = clients.map((c) => holdBack(c, scripts.acquire, HELD_BACK_MS));
        // acquire() waits (its first round would queue it if the lock were held); tryAcquire() is a single attempt.
        const acquiring = call === 'acquire' ? locks.acquire('close-in-flight') : locks.tryAcquire('close-in-flight');
        const rejected = assert.rejects(acquiring, ManagerClosedError);
        // The round's requests were made in the call itself: held back now, answered HELD_BACK_MS later.
        const answered = Promise.all(held.map((h) => h.settled));
        let roundAnswered = false;
        void answered.then(() => (roundAnswered = true));
        const closed = locks.close();
        await rejected;
        assert.equal(roundAnswered, false, 'the call rejected at once, before its round was answered');
        await within(closed, 5_000, 'close()');
        assert.equal(roundAnswered, true, 'close() waited for the abandoned round (and what it won)');
        assert.deepEqual(
          await Promise.all(admin.map((a) => a.get(LOCK('close-in-flight')))),
          admin.map(() => null),
          'the lock the abandoned round won is released, not left for its 60 s ttl',
        );
      } finally {
        await locks.close();
        for (const c of [...clients, ...admin]) c.disconnect();
        await nodes.stop();
      }
    });
  });
}
