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

  /** Either client: what is checked is the 'error' listeners it keeps. */
  interface Client {
    listeners(event: 'error'): unknown[];
  }

  /** The caller's own 'error' listener, put on each client before anything else. */
  const own = (): void => undefined;

  /** Builds, uses and closes MANAGERS managers over `client`, one after the other, and checks its listeners. */
  async function buildAndClose(client: Client): Promise<void> {
    for (let i = 0; i < MANAGERS; i++) {
      const locks = new LockManager([client], { ttl: 2_000 });
      // Used, not only built: the first acquire is what subscribes and connects on a lazy client.
      const lock = await locks.acquire(`job-${i}`);
      await lock.release();
      assert.equal(client.listeners('error').length, 2, `manager ${i}: its listener beside the caller's own`);
      await locks.close();
    }
    assert.deepEqual(client.listeners('error'), [own], "after the last close only the caller's listener is left");
  }

  test('ioredis', async () => {
    const client = new Redis(node.url);
    client.on('error', own);
    try {
      await buildAndClose(client);
    } finally {
      client.disconnect();
    }
  });

  test('node-redis', async () => {
    const client = createClient({ url: node.url });
    client.on('error', own);
    await client.connect();
    try {
      await buildAndClose(client);
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
