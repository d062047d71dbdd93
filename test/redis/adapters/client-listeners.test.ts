// A client the caller passed in outlives the managers built on it: a process may build and close one per job, per
// tenant or per test. Each manager puts an 'error' listener on each client (src/redis/adapters: node-redis throws an
// 'error' event that has none); close() must take it off again, or the client keeps every closed manager alive
// through it and Node warns of a leak at the eleventh. Real redis-server, real ioredis and node-redis clients.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { LockManager } from '../../../src/index.js';
import { startRedisNode, type LocalRedisNode } from '../../../src/testing/index.js';

/** More managers than an EventEmitter's default limit of listeners per event (10). */
const MANAGERS = 12;

describe("closed managers leave no 'error' listener on the caller's client", () => {
  let node: LocalRedisNode;
  before(async () => {
    node = await startRedisNode();
  });
  after(async () => {
    await node.stop();
  });

  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning);
  before(() => process.on('warning', onWarning));
  after(() => process.removeListener('warning', onWarning));

  /** Either client: what is counted is its listeners. */
  async function buildAndClose(client: { listenerCount(event: string): number }): Promise<number[]> {
    const counts: number[] = [];
    for (let i = 0; i < MANAGERS; i++) {
      const locks = new LockManager([client], { ttl: 2_000 });
      // Used, not only built: the first acquire is what subscribes and connects on a lazy client.
      const lock = await locks.acquire(`job-${i}`);
      await lock.release();
      counts.push(client.listenerCount('error'));
      await locks.close();
    }
    return counts;
  }

  test('ioredis', async () => {
    const client = new Redis(node.url);
    const own = (): void => undefined;
    client.on('error', own);
    try {
      const counts = await buildAndClose(client);
      assert.deepEqual(counts, Array<number>(MANAGERS).fill(2), "one listener of the open manager's beside the caller's own");
      assert.equal(client.listenerCount('error'), 1, "after the last close only the caller's listener is left");
      assert.deepEqual(client.listeners('error'), [own]);
    } finally {
      client.disconnect();
    }
  });

  test('node-redis', async () => {
    const client = createClient({ url: node.url });
    const own = (): void => undefined;
    client.on('error', own);
    await client.connect();
    try {
      const counts = await buildAndClose(client);
      assert.deepEqual(counts, Array<number>(MANAGERS).fill(2), "one listener of the open manager's beside the caller's own");
      assert.equal(client.listenerCount('error'), 1, "after the last close only the caller's listener is left");
      assert.deepEqual(client.listeners('error'), [own]);
    } finally {
      client.destroy();
    }
  });

  test('no MaxListenersExceededWarning was emitted', () => {
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
      [],
    );
  });
});
