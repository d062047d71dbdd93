// The mutex's lazy fence write-back (redlock.ts agreeOnFence): when a quorum already holds the fence, a node that
// merely lags is raised in the background and the acquire resolves without waiting for it. close() must still
// wait for that write before it lets the connections go (a reviewer read it as untracked; it is tracked by
// Redlock.background). Here the write-back to the lagging node is held back in its client for 150 ms.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager } from '../../src/index.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { scripts } from '../../src/redis/scripts/index.js';
import { holdBack } from './fixtures/held-back.js';

const MARKER = 'fencelock:{node}:epoch';
const HELD_BACK_MS = 150;

describe('lazy fence write-back', () => {
  test('close() waits for the write-back to a lagging node that the acquire did not wait for', async () => {
    const nodes = await startRedisNodes(3);
    const clients = nodes.urls.map((url) => new Redis(url));
    const admin = nodes.urls.map((url) => new Redis(url));
    try {
      // Node 0's client holds back the acquire script a little, so that the round hears nodes 1 and 2 first: their
      // fences differ, and the round is not decided before every node answered (redlock.ts firstClear) but
      // judged in full, with the write-back.
      holdBack(clients[0] as Redis, scripts.acquire, 20);
      // Node 2's client holds back the raise-fence script (EVALSHA or, the first time, EVAL with its body).
      const lagging = clients[2] as Redis;
      const send = lagging.call.bind(lagging) as (command: string, ...args: string[]) => Promise<unknown>;
      let writeBackDone: number | undefined;
      let writeBacks = 0;
      (lagging as unknown as { call: typeof send }).call = (command, ...args) => {
        if (args[0] !== scripts.raiseFence.sha && args[0] !== scripts.raiseFence.source) return send(command, ...args);
        writeBacks++;
        const held = new Promise((resolve) => setTimeout(resolve, HELD_BACK_MS)).then(() => send(command, ...args));
        void held.finally(() => (writeBackDone = performance.now())).catch(() => undefined);
        return held;
      };
      const locks = new LockManager(clients, { ttl: 10_000, nodeTimeout: 1_000 });
      // Bootstrap (every node trusted, counters equal), then nodes 0 and 1 move ahead of node 2.
      await (await locks.acquire('warm-up')).release();
      const bootstrapWriteBacks = writeBacks;
      writeBackDone = undefined;
      await Promise.all(admin.slice(0, 2).map((a) => a.hincrby(MARKER, 'fence', 100)));

      const lock = await locks.acquire('lagging');
      assert.equal(writeBacks, bootstrapWriteBacks + 1, 'the acquire sent one write-back, to the lagging node');
      assert.equal(writeBackDone, undefined, 'and resolved without waiting for it');
      await locks.close();
      const closed = performance.now();
      assert.ok(writeBackDone !== undefined && writeBackDone <= closed, 'close() resolved only after the write-back had settled');
      const counter = BigInt((await (admin[2] as Redis).hget(MARKER, 'fence')) ?? '0');
      assert.ok(counter >= lock.fence, `the lagging node's counter ${counter} reached the lock's fence ${lock.fence}`);
    } finally {
      for (const c of [...clients, ...admin]) c.disconnect();
      await nodes.stop();
    }
  });
});
