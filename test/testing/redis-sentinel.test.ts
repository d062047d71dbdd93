import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { type LocalRedisSentinel, RedisServerNotFoundError, startRedisSentinel } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';

// Everything started here is stopped in `after`, even when an assertion fails midway.
const started: LocalRedisSentinel[] = [];
after(() => Promise.all(started.map((s) => s.stop())));
async function setup(opts?: Parameters<typeof startRedisSentinel>[0]): Promise<LocalRedisSentinel> {
  const s = await startRedisSentinel(opts);
  started.push(s);
  return s;
}

/** A client of one node that gives up fast instead of reconnecting forever to a node the test killed. */
async function withClient<T>(url: string, fn: (c: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

describe('local redis with sentinel', () => {
  test('a primary, its replica and 3 sentinels on distinct free ports (never 6379/26379); a write on the primary reaches the replica', async () => {
    const s = await setup({ replicas: 1, sentinels: 3, downAfterMs: 1000 });
    assert.equal(s.replicas.length, 1);
    assert.equal(s.sentinels.length, 3);
    const ports = [s.primary.port, ...s.replicas.map((r) => r.port), ...s.sentinels.map((x) => x.port)];
    assert.equal(new Set(ports).size, 5);
    assert.ok(!ports.includes(6379) && !ports.includes(26379));
    assert.ok(s.sentinels.every((x) => x.host === '127.0.0.1'));
    assert.equal(s.name, 'fencelock');
    assert.equal((await s.currentPrimary())?.port, s.primary.port, 'the sentinels report the first node as the primary');

    await withClient(s.primary.url, (c) => c.set('k', 'from-primary'));
    const replica = s.replicas[0]!;
    await eventually(async () => (await withClient(replica.url, (c) => c.get('k'))) === 'from-primary', 5_000, 20);
    await assert.rejects(
      withClient(replica.url, (c) => c.set('k', 'x')),
      /READONLY/,
    );
  });

  test('SIGKILL of the primary: the sentinels promote the replica within a bounded time, and a { sentinels, name } client writes to it', async () => {
    const s = await setup({ replicas: 1, sentinels: 3, downAfterMs: 1000 });
    const old = s.primary;
    const replica = s.replicas[0]!;
    const client = new Redis({ sentinels: s.sentinels, name: s.name, maxRetriesPerRequest: 3, sentinelRetryStrategy: () => 100 });
    client.on('error', () => {});
    try {
      await client.set('before', '1');
      await s.waitForSync();
      const killedAt = performance.now();
      await old.kill();
      const promoted = await s.waitForFailover(old.port, 30_000);
      const took = performance.now() - killedAt;
      console.log(`failover: ${took.toFixed(0)} ms from SIGKILL to every sentinel reporting the promoted replica (down-after 1000 ms)`);
      assert.equal(promoted, replica);
      assert.equal(s.primary, replica);
      assert.deepEqual(s.replicas, [old]);
      assert.ok(took < 15_000, `failover took ${took.toFixed(0)} ms`);

      // The client finds the new primary through the sentinels (bounded: its own retries, and 10 s here).
      await eventually(
        async () =>
          client.set('after', '2').then(
            () => true,
            () => false,
          ),
        10_000,
        100,
      );
      assert.equal(await withClient(replica.url, (c) => c.get('after')), '2', 'written to the promoted replica');
      assert.equal(await withClient(replica.url, (c) => c.get('before')), '1', 'it kept what it had replicated');
    } finally {
      client.disconnect();
    }
  });

  test('stop() ends every process by its own pid and removes their dirs; twice is fine; await using stops too', async () => {
    const s = await startRedisSentinel({ sentinels: 1 });
    const all = [...s.nodes, ...s.sentinelNodes];
    const pids = all.map((n) => n.pid!);
    assert.equal(pids.length, 3);
    assert.ok(pids.every((p) => typeof p === 'number'));
    await s.stop();
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    assert.ok(all.every((n) => !existsSync(n.dir)));
    await s.stop();

    let scoped: number[];
    {
      await using t = await startRedisSentinel({ sentinels: 1 });
      scoped = [...t.nodes, ...t.sentinelNodes].map((n) => n.pid!);
    }
    for (const pid of scoped) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  });
});

describe('sentinel helper input', () => {
  test('replicas < 1, sentinels < 1 and the like throw RangeError before any process starts', async () => {
    // With no redis-server to find, only a check that runs before anything starts can give a RangeError.
    const saved = process.env.REDIS_SERVER;
    process.env.REDIS_SERVER = '/nonexistent/redis-server';
    try {
      for (const bad of [{ replicas: 0 }, { sentinels: 0 }, { replicas: 1.5 }, { sentinels: -1 }, { downAfterMs: 0 }, { name: 'a b' }]) {
        await assert.rejects(startRedisSentinel(bad), RangeError, JSON.stringify(bad));
      }
      await assert.rejects(startRedisSentinel(), RedisServerNotFoundError);
    } finally {
      if (saved === undefined) delete process.env.REDIS_SERVER;
      else process.env.REDIS_SERVER = saved;
    }
  });
});
