// waitForReplicas: a primary with a real replica as one node. A grant counts only once the replica has
// the write; a paused replica (it cannot acknowledge) makes the node's grant not count.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { InvalidArgumentError, LockManager, QuorumError } from '../../src/index.js';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';

const OPTIONS = { ttl: 3000, nodeTimeout: 200, waitForReplicas: { replicas: 1, timeout: 100 } };

describe('waitForReplicas: a primary and its replica as one node', () => {
  let primary: LocalRedisNode;
  let replica: LocalRedisNode;
  let admin: Redis;
  before(async () => {
    primary = await startRedisNode({ args: ['--repl-diskless-sync-delay', '0'] });
    replica = await startRedisNode({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    admin = new Redis(primary.url);
    // After its first sync a replica is streamed to only once it has acknowledged (about a second later):
    // until then WAIT counts it as behind. Ready means a write is confirmed.
    await eventually(
      async () => {
        await admin.set('replica-probe', String(Date.now()));
        return Number(await admin.call('WAIT', '1', '100')) === 1;
      },
      15_000,
      50,
    );
  });
  after(async () => {
    admin?.disconnect();
    await replica?.stop();
    await primary?.stop();
  });

  test('with the replica acknowledging, acquire succeeds and the replica has the key', async () => {
    const locks = new LockManager([primary.url], OPTIONS);
    try {
      const lock = await locks.acquire('acked');
      const onReplica = new Redis(replica.url);
      try {
        assert.equal(await onReplica.get('fencelock:{acked}:lock'), lock.value, 'the lock key reached the replica before acquire resolved');
      } finally {
        onReplica.disconnect();
      }
      await lock.release();
    } finally {
      await locks.close();
    }
  });

  test('node-redis: the same through a node-redis client', async () => {
    const client = createClient({ url: primary.url });
    client.on('error', () => undefined);
    await client.connect();
    const locks = new LockManager([client], OPTIONS);
    try {
      const lock = await locks.acquire('acked-nr');
      assert.ok(lock.fence > 0n, 'acquired with a fence');
      await lock.release();
    } finally {
      await locks.close();
      await client.quit();
    }
  });

  test('with the replica paused, the grant does not count: QuorumError naming the node, and no key left behind', async () => {
    const locks = new LockManager([primary.url], OPTIONS);
    await locks.tryAcquire('warm-up').then((l) => l?.release());
    await replica.pause();
    try {
      const started = performance.now();
      const error = await locks.acquire('unacked', { timeout: 2000 }).then(
        () => assert.fail('acquire must not succeed without the replica'),
        (e: unknown) => e,
      );
      const took = performance.now() - started;
      assert.ok(error instanceof QuorumError, `QuorumError expected, got ${String(error)}`);
      assert.match(error.message, /only 0 of 1 replicas confirmed/);
      assert.ok(error.message.includes(primary.url.replace('redis://', '')), `names the node: ${error.message}`);
      assert.ok(took < 1500, `rejected after ${took.toFixed(0)} ms`);
      assert.equal(await admin.exists('fencelock:{unacked}:lock'), 0, 'the unconfirmed key was released on the primary');
    } finally {
      await replica.resume();
      await locks.close();
    }
    // Once the replica is back, locks are granted again.
    const again = new LockManager([primary.url], OPTIONS);
    try {
      await eventually(
        async () =>
          (await again
            .tryAcquire('unacked')
            .catch(() => null)
            .then((l) => l?.release().then(() => true))) === true,
        10_000,
        50,
      );
    } finally {
      await again.close();
    }
  });

  test('bad waitForReplicas options are rejected before any network call', () => {
    for (const bad of [
      { replicas: 0, timeout: 10 },
      { replicas: 1, timeout: 0 },
      { replicas: 1, timeout: 2000 },
      { replicas: 1.5, timeout: 10 },
      'yes',
    ]) {
      assert.throws(
        () => new LockManager([primary.url], { ...OPTIONS, waitForReplicas: bad as never }),
        InvalidArgumentError,
        JSON.stringify(bad),
      );
    }
  });
});
