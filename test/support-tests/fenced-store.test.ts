// The fenced store and the Recorder against real redis-server nodes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager } from '../../src/index.js';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { checkHistory, FencedStore, Recorder, type HistoryRecord } from '../support/faults/index.js';

let node: LocalRedisNode;
let store: FencedStore;
before(async () => {
  node = await startRedisNode();
  store = new FencedStore(node.url);
});
after(async () => {
  store?.close();
  await node?.stop();
});

describe('FencedStore', () => {
  test('accepts only a fence greater than the last accepted one, and logs every attempt in order', async () => {
    assert.deepEqual(await store.read('k'), { value: null, fence: '0' });
    const outcomes = [];
    for (const [value, fence] of [
      ['a', 5n],
      ['b', 3n],
      ['c', 5n],
      ['d', 6n],
    ] as const)
      outcomes.push(await store.write('k', value, fence, 100n + fence));
    assert.deepEqual(outcomes, [true, false, false, true]);
    assert.deepEqual(await store.read('k'), { value: 'd', fence: '6' });
    assert.deepEqual(await store.log('k'), [
      { fence: '5', accepted: true, at: 105n },
      { fence: '3', accepted: false, at: 103n },
      { fence: '5', accepted: false, at: 105n },
      { fence: '6', accepted: true, at: 106n },
    ]);
    assert.deepEqual(await store.log('other'), []);
  });

  test('compares fences exactly past 2^53 and refuses malformed ones', async () => {
    assert.equal(await store.write('big', 1, '9007199254740992'), true);
    assert.equal(await store.write('big', 2, '9007199254740993'), true, 'a fence one above 2^53 must beat 2^53');
    assert.equal(await store.write('big', 3, '9007199254740992'), false);
    assert.equal(await store.write('big', 4, '10000000000000000000000'), true);
    assert.equal((await store.read('big')).fence, '10000000000000000000000');
    for (const bad of ['-1', '007', '1.5', '', 'x'])
      await assert.rejects(store.write('big', 0, bad), RangeError, `fence ${JSON.stringify(bad)}`);
  });

  test('concurrent writes: accepted fences strictly increase and the checker agrees with the store', async () => {
    const fences = Array.from({ length: 60 }, (_, i) => BigInt(1 + ((i * 37) % 60)));
    // Several connections, so the writes really interleave at the server.
    const clients = Array.from({ length: 4 }, () => new Redis(node.url, { maxRetriesPerRequest: 1 }));
    try {
      const stores = clients.map((c) => new FencedStore(c));
      await Promise.all(fences.map((f, i) => stores[i % stores.length]!.write('c', String(f), f)));
    } finally {
      clients.forEach((c) => c.disconnect());
    }
    const log = await store.log('c');
    assert.equal(log.length, fences.length);
    const accepted = log.filter((w) => w.accepted).map((w) => BigInt(w.fence));
    assert.deepEqual(
      accepted,
      [...accepted].sort((a, b) => (a < b ? -1 : 1)),
    );
    assert.equal(new Set(accepted).size, accepted.length, 'an accepted fence repeated');
    assert.equal((await store.read('c')).fence, String(accepted.at(-1)));
    const result = checkHistory([], { c: log });
    assert.deepEqual(result.violations, []);
    await store.clear('c');
    assert.deepEqual(await store.log('c'), []);
  });
});

describe('Recorder', () => {
  test('records a released holding and a lost one with the windows the lock claimed', async () => {
    const manager = new LockManager([node.url], { ttl: 300, nodeTimeout: 50 });
    const records: HistoryRecord[] = [];
    const recorder = new Recorder(manager, 'w1', (r) => records.push(r));
    try {
      const before = process.hrtime.bigint();
      const fence = await recorder.withLock('res', async (lock) => lock.fence);
      assert.equal(records.length, 1);
      const [r] = records as [HistoryRecord];
      assert.deepEqual([r.resource, r.fence, r.worker, r.endReason], ['res', String(fence), 'w1', 'released']);
      assert.ok(before <= r.acquiredAt && r.acquiredAt <= r.endedAt, `bad order: ${before} ${r.acquiredAt} ${r.endedAt}`);
      const validity = Number(r.validUntil - r.acquiredAt) / 1e6;
      // The lease counts from before the acquire's first request: ttl - drift (5 ms) - however long the acquire took.
      const acquireMs = Number(r.acquiredAt - before) / 1e6;
      assert.ok(validity <= 295 && validity >= 295 - acquireMs - 5, `validity ${validity} ms for ttl 300 after a ${acquireMs} ms acquire`);

      // Auto-extension moves validUntil; then no extension: the lease runs out and the loss is recorded.
      // Bounded: a lock that is never extended is lost within its ttl, which also ends the wait.
      await recorder.withLock(
        'ext',
        (lock) =>
          new Promise<void>((resolve) => {
            manager.once('extended', () => resolve());
            lock.signal.addEventListener('abort', () => resolve());
          }),
      );
      const ext = records[1]!;
      assert.ok(ext.validUntil - ext.acquiredAt > 300n * 1_000_000n, 'validUntil did not move on extension');
      await assert.rejects(
        recorder.withLock('lost', (lock) => new Promise((resolve) => lock.signal.addEventListener('abort', resolve)), {
          autoExtend: false,
        }),
        { code: 'LOCK_LOST' },
      );
      const lost = records[2]!;
      assert.equal(lost.endReason, 'lost');
      assert.ok(lost.validUntil <= lost.endedAt, 'a loss is detected no earlier than the validity ran out');
      assert.deepEqual(checkHistory(records).violations, []);
    } finally {
      recorder.close();
      await manager.close();
    }
  });
});
