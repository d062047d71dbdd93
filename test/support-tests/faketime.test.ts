// Clock-drift nodes: a redis-server whose clock runs 1.5 x real time.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { LocalRedisNode } from '../../src/testing/index.js';
import { faketimeAvailable, faketimeCommandPrefix, startDriftingNode } from '../support/faults/index.js';
import { requireComponent } from '../support/optional.js';

const started: LocalRedisNode[] = [];
after(() => Promise.all(started.map((n) => n.stop())));

const skip = requireComponent(faketimeAvailable(), 'faketime', 'faketime');
/** Resolves at `ms` after `from` on the real (monotonic) clock. */
const until = (from: number, ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, from + ms - performance.now())));

describe('faketime', () => {
  test('rejects a nonsensical rate', () => {
    for (const rate of [0, -1, Number.NaN, Infinity]) assert.throws(() => faketimeCommandPrefix(rate), RangeError);
  });

  test('a node at x1.5 expires a PX 1000 key after ~667 ms of real time', { skip }, async () => {
    const node = await startDriftingNode(1.5);
    started.push(node);
    // The PID must be redis-server itself (the prefix execs), so kill()/pause() signal Redis, not a wrapper.
    if (existsSync(`/proc/${node.pid}/comm`)) assert.equal(readFileSync(`/proc/${node.pid}/comm`, 'utf8').trim(), 'redis-server');
    const c = new Redis(node.url, { maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    try {
      await c.ping();
      const sent = performance.now();
      await c.set('k', 'v', 'PX', 1000);
      const answered = performance.now();
      const first = await c.pttl('k');
      const firstAt = performance.now();

      // 400 ms real = at most 600 ms (+ the SET's round trip) for the node: still there.
      await until(sent, 400);
      const mid = await c.pttl('k');
      const midAt = performance.now();
      assert.ok(mid > 0, `key gone at ~400 ms real time (PTTL ${mid})`);
      // PTTL falls 1.5 ms per real ms (slack for scheduling and round trips on a busy machine).
      const rate = (first - mid) / (midAt - firstAt);
      assert.ok(rate > 1.3 && rate < 1.8, `node clock ran at x${rate.toFixed(2)}, expected ~x1.5`);

      // 800 ms real after the SET was answered = at least 1200 ms for the node: expired.
      await until(answered, 800);
      assert.equal(await c.pttl('k'), -2, 'key still present at ~800 ms real time');
      assert.equal(await c.exists('k'), 0);
    } finally {
      c.disconnect();
    }
    // The node stops by its own PID like any other.
    const pid = node.pid;
    await node.stop();
    assert.equal(node.isRunning(), false);
    assert.equal(existsSync(`/proc/${pid}`), false, `pid ${pid} still exists after stop()`);
  });
});
