// The fault proxy against a real redis-server: latency, blackhole, reset, partition.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventEmitter } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { startProxy, type Proxy } from '../support/faults/index.js';

let node: LocalRedisNode;
const cleanups: Array<() => unknown> = [];
before(async () => {
  node = await startRedisNode();
});
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await node?.stop();
});

async function proxy(): Promise<Proxy> {
  const p = await startProxy(node.port);
  cleanups.push(() => p.close());
  return p;
}

/** An ioredis client through the proxy that reconnects fast and never queues a command for long. */
function client(p: Proxy): Redis {
  const c = new Redis(p.url, { maxRetriesPerRequest: 1, retryStrategy: () => 20 });
  c.on('error', () => undefined);
  cleanups.push(() => c.disconnect());
  return c;
}

/** Resolves 'timeout' after `ms`; unref'd so a race already won does not hold the process. */
const bound = (ms: number): Promise<'timeout'> => new Promise((resolve) => setTimeout(() => resolve('timeout'), ms).unref());

/** One PING over a raw socket: '+PONG', 'closed' (cut without a reply), or 'timeout'. */
function rawPing(port: number, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (r: string): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done('timeout'), ms);
    s.on('error', () => done('closed'));
    s.on('close', () => done(reply.trim() || 'closed'));
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d: Buffer) => {
      reply += d.toString('latin1');
      if (reply.includes('\r\n')) done(reply.trim());
    });
  });
}

/** The event's arguments, or a rejection after `ms`. Unlike events.once, an 'error' meanwhile does not reject. */
function next(emitter: EventEmitter, event: string, ms = 3_000): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`no '${event}' within ${ms} ms`));
    }, ms);
    const on = (...args: unknown[]): void => {
      clearTimeout(timer);
      resolve(args);
    };
    emitter.once(event, on);
  });
}

const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

describe('fault proxy', () => {
  test('forwards both ways, and latency delays each direction while keeping order', async () => {
    const p = await proxy();
    assert.match(p.url, /^redis:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(p.port, node.port);
    const c = client(p);
    assert.equal(await c.ping(), 'PONG');
    const baseline = await timed(() => c.ping());

    const LATENCY = 60;
    p.setLatency(LATENCY);
    const slow = await timed(() => c.ping());
    // Request and reply are each delayed: at least 2 x latency (1 ms slack per timer for rounding).
    assert.ok(slow >= 2 * LATENCY - 2, `PING took ${slow.toFixed(1)} ms with ${LATENCY} ms latency (baseline ${baseline.toFixed(1)} ms)`);

    // A pipeline of many small replies and a value of many chunks must arrive whole and in order.
    const big = 'x'.repeat(3 * 1024 * 1024);
    const pipeline = c.pipeline();
    pipeline.set('big', big);
    for (let i = 0; i < 200; i++) pipeline.incr('n');
    pipeline.get('big');
    const results = (await pipeline.exec()) ?? [];
    assert.deepEqual(
      results.slice(1, 201).map(([, v]) => v),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    assert.ok(results[201]?.[1] === big, 'the 3 MiB value came back changed');

    p.setLatency(0);
    const fast = await timed(() => c.ping());
    assert.ok(fast < LATENCY, `PING still took ${fast.toFixed(1)} ms after latency 0`);
    assert.throws(() => p.setLatency(-1), RangeError);
  });

  test('blackhole holds every byte (PING times out) and heal lets them flow again', async () => {
    const p = await proxy();
    const c = client(p);
    assert.equal(await c.ping(), 'PONG');
    p.blackhole();
    const pending = c.ping();
    assert.equal(await Promise.race([pending, bound(300)]), 'timeout', 'PING answered through a blackhole');
    // New connections are accepted but hear nothing either.
    assert.equal(await rawPing(p.port, 200), 'timeout');
    assert.equal(p.connections >= 1, true);
    p.heal();
    // The held request was delivered, not dropped: it gets its own reply, then new commands work.
    assert.equal(await Promise.race([pending, bound(2_000)]), 'PONG');
    assert.equal(await c.ping(), 'PONG');
  });

  test('reset cuts live connections with an error; the client reconnects', async () => {
    const p = await proxy();
    const c = client(p);
    assert.equal(await c.ping(), 'PONG');
    const errored = next(c, 'error');
    const reconnected = next(c, 'ready');
    p.reset();
    const [error] = (await errored) as [NodeJS.ErrnoException];
    assert.equal(error.code, 'ECONNRESET', `expected an RST, got ${String(error)}`);
    await reconnected;
    assert.equal(await c.ping(), 'PONG');
  });

  test('partition refuses new connections and cuts existing ones until heal', async () => {
    const p = await proxy();
    const c = client(p);
    assert.equal(await c.ping(), 'PONG');
    const closed = next(c, 'close');
    p.partition();
    await closed;
    assert.equal(await rawPing(p.port, 2_000), 'closed');
    assert.equal(c.status === 'ready', false, 'client still ready across a partition');
    const ready = next(c, 'ready'); // before heal: the client may reconnect at once
    p.heal();
    assert.equal(await rawPing(p.port, 2_000), '+PONG');
    await ready;
    assert.equal(await c.ping(), 'PONG');
  });

  test('a node that dies reaches the client as a cut connection; close() stops listening', async () => {
    const other = await startRedisNode();
    cleanups.push(() => other.stop());
    const p = await startProxy(other.port);
    const c = new Redis(p.url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
    c.on('error', () => undefined);
    // ioredis arms a 2 s timer in disconnect() that only a later 'close' clears: skip it once the connection has ended.
    cleanups.push(() => (c.status === 'end' ? undefined : c.disconnect()));
    assert.equal(await c.ping(), 'PONG');
    const closed = next(c, 'close');
    await other.kill();
    await closed;
    assert.equal(await rawPing(p.port, 2_000), 'closed', 'a connection to a dead node must be cut, not left hanging');
    await p.close();
    await p.close(); // idempotent
    assert.equal(await rawPing(p.port, 2_000), 'closed');
    assert.equal(p.connections, 0);
  });
});
