import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import {
  type LocalRedisNode,
  type LocalRedisNodes,
  RedisServerNotFoundError,
  startRedisNode,
  startRedisNodes,
} from '../../src/testing/index.js';

// Everything started here is stopped in `after`, even when an assertion fails midway.
const started: Array<LocalRedisNode | LocalRedisNodes> = [];
after(() => Promise.all(started.map((n) => n.stop())));
async function node(opts?: Parameters<typeof startRedisNode>[0]): Promise<LocalRedisNode> {
  const n = await startRedisNode(opts);
  started.push(n);
  return n;
}

/** A client that gives up fast instead of reconnecting forever to a node the test killed. */
async function withClient<T>(url: string, fn: (c: Redis) => Promise<T>, password?: string): Promise<T> {
  const client = new Redis(url, { password, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

// unref'd: a race the reply already won must not hold the test process open.
const timeout = (ms: number) => new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms).unref());

describe('local redis nodes', () => {
  test('startRedisNodes starts independent nodes on distinct free ports', async () => {
    const group = await startRedisNodes(2);
    started.push(group);
    const ports = group.nodes.map((n) => n.port);
    assert.equal(new Set(ports).size, 2);
    assert.ok(!ports.includes(6379));
    assert.deepEqual(
      group.urls,
      ports.map((p) => `redis://127.0.0.1:${p}`),
    );
    for (const n of group.nodes) {
      assert.ok(n.isRunning());
      assert.equal(typeof n.pid, 'number');
      assert.equal(await withClient(n.url, (c) => c.ping()), 'PONG');
    }
    await withClient(group.urls[0]!, (c) => c.set('k', 'only-on-0'));
    assert.equal(await withClient(group.urls[1]!, (c) => c.get('k')), null);
  });

  test('pause() hangs the node with the connection open; resume() lets the reply through', async () => {
    const n = await node();
    await withClient(n.url, async (c) => {
      assert.equal(await c.ping(), 'PONG');
      n.pause();
      const pending = c.ping();
      assert.equal(await Promise.race([pending, timeout(300)]), 'timeout');
      n.resume();
      assert.equal(await Promise.race([pending, timeout(2_000)]), 'PONG');
    });
  });

  test('restart() keeps the port and, without persistence, loses the data', async () => {
    const n = await node();
    const { port } = n;
    const pidBefore = n.pid;
    await withClient(n.url, (c) => c.set('k', 'v'));
    await n.restart();
    assert.equal(n.port, port);
    assert.notEqual(n.pid, pidBefore);
    assert.equal(await withClient(n.url, (c) => c.get('k')), null);
    await assert.rejects(n.restart({ keepData: true }), /persistence/);
  });

  test('restart() with persistence keeps the data, unless keepData: false', async () => {
    const n = await node({ persistence: true });
    await withClient(n.url, (c) => c.set('k', 'v'));
    await n.restart();
    assert.equal(await withClient(n.url, (c) => c.get('k')), 'v');
    await n.restart({ keepData: false });
    assert.equal(await withClient(n.url, (c) => c.get('k')), null);
  });

  test('kill() ends the process (also a paused one, with SIGTERM) and restart() brings it back', async () => {
    const n = await node();
    n.pause();
    await n.kill('SIGTERM');
    assert.equal(n.isRunning(), false);
    assert.equal(n.pid, undefined);
    await n.kill(); // idempotent
    await n.restart();
    assert.equal(await withClient(n.url, (c) => c.ping()), 'PONG');
  });

  // Overlapping, two restarts killed each other's servers ("failed to start: exited with SIGKILL" for both): a
  // chaos schedule restarting nodes twice within 0.6 s met that on a loaded machine.
  test('restarts and kills called while a restart runs take effect one after another, in call order', async () => {
    const n = await node();
    const pids: Array<number | undefined> = [];
    const first = n.restart().then(() => pids.push(n.pid));
    const second = n.restart().then(() => pids.push(n.pid));
    await Promise.all([first, second]);
    assert.equal(pids.length, 2);
    assert.ok(pids[0] !== undefined && pids[1] !== undefined && pids[0] !== pids[1], `two servers in turn: ${pids.join(', ')}`);
    assert.equal(n.pid, pids[1]);
    assert.equal(await withClient(n.url, (c) => c.ping()), 'PONG');
    // A kill called during a restart kills the server that restart started, not one still starting.
    const restarting = n.restart();
    const killing = n.kill();
    await Promise.all([restarting, killing]);
    assert.equal(n.isRunning(), false);
  });

  test('stop() kills the process by its PID and removes its dir; it is idempotent', async () => {
    const n = await node();
    const pid = n.pid;
    assert.ok(pid !== undefined && existsSync(n.dir));
    await n.stop();
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    assert.equal(existsSync(n.dir), false);
    await n.stop();
    await assert.rejects(n.restart(), /stopped/);
  });

  test('extra args are passed through (a password-protected node still counts as ready)', async () => {
    const n = await node({ args: ['--requirepass', 'sekrit'] });
    assert.equal(await withClient(n.url, (c) => c.ping(), 'sekrit'), 'PONG');
    await assert.rejects(
      withClient(n.url, (c) => c.ping()),
      /NOAUTH/,
    );
  });

  test('a server that cannot start rejects with its own error output', async () => {
    await assert.rejects(startRedisNode({ args: ['--no-such-option', 'x'] }), /failed to start[\s\S]*no-such-option/i);
  });

  test('await using stops the whole group', async () => {
    let pids: number[];
    {
      await using group = await startRedisNodes(2);
      pids = group.nodes.map((n) => n.pid!);
    }
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  });

  test('RedisServerNotFoundError when REDIS_SERVER points nowhere', async () => {
    const saved = process.env.REDIS_SERVER;
    process.env.REDIS_SERVER = '/nonexistent/redis-server';
    try {
      await assert.rejects(startRedisNode(), (err: unknown) => {
        assert.ok(err instanceof RedisServerNotFoundError);
        assert.match(err.message, /apt-get install -y redis-server/);
        assert.match(err.message, /brew install redis/);
        return true;
      });
    } finally {
      if (saved === undefined) delete process.env.REDIS_SERVER;
      else process.env.REDIS_SERVER = saved;
    }
  });
});
