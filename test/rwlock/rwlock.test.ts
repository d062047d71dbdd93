// Read-write lock: readers share, writers exclude, writer preference, leases, loss, bad input, node failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, LockTimeoutError, type LockManager } from '../../src/index.js';
import { CLIENT_KINDS, delay } from '../support/harness.js';
import { NODE_COUNTS, readyManager, settle, uniqueResource, within, withNodeSets } from '../lock-manager/helpers.js';
import {
  abortReason,
  expectInvalidWithoutTraffic,
  expectWrongType,
  keyOf,
  Occupancy,
  OPTIONS,
  withNodesDown,
} from '../semaphore/helpers.js';

const WORKERS = 8;
const ROUNDS = 5;

withNodeSets('read-write lock', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: ${WORKERS} workers x ${ROUNDS} rounds: a writer is alone, readers share`, async (t) => {
      const managers: LockManager[] = [];
      for (let i = 0; i < 3; i++) managers.push(await readyManager(env(), kind, OPTIONS));
      const name = uniqueResource(`rw-${kind}`);
      const store = env().admin[0]!;
      const counterKey = `test:counter:${name}`;
      const readers = new Occupancy();
      const writers = new Occupancy();
      let writes = 0;
      const worker = async (id: number): Promise<void> => {
        const rw = managers[id % managers.length]!.readWriteLock(name);
        for (let round = 0; round < ROUNDS; round++) {
          if ((id + round) % 3 === 0) {
            await rw.withWrite(async (lock) => {
              writers.enter();
              try {
                assert.equal(readers.now, 0, 'no reader inside while a writer is');
                assert.equal(writers.now, 1, 'one writer at a time');
                assert.ok(lock.isValid(), 'write hold valid inside');
                // read-modify-write with an await in between: an overlap would lose an increment
                const current = Number((await store.get(counterKey)) ?? '0');
                await delay(2);
                await store.set(counterKey, String(current + 1));
                writes++;
              } finally {
                writers.leave();
              }
            });
          } else {
            await rw.withRead(async () => {
              readers.enter();
              try {
                assert.equal(writers.now, 0, 'no writer inside while a reader is');
                await delay(5 + Math.random() * 10);
                assert.equal(writers.now, 0, 'no writer inside while a reader is');
              } finally {
                readers.leave();
              }
            });
          }
        }
      };
      const began = performance.now();
      await Promise.all(Array.from({ length: WORKERS }, (_, id) => worker(id)));
      t.diagnostic(
        `${WORKERS * ROUNDS} holds on ${nodeCount} node(s) in ${Math.round(performance.now() - began)} ms, max ${readers.max} readers`,
      );
      assert.equal(await store.get(counterKey), String(writes));
      assert.ok(writes > 0, 'some writes happened');
      assert.ok(readers.max >= 2, `readers shared the lock (max ${readers.max})`);
      const left = await Promise.all(
        env().admin.map(async (a) => (await a.zcard(keyOf(name, 'readers'))) + (await a.exists(keyOf(name, 'writer')))),
      );
      assert.deepEqual(
        left,
        env().admin.map(() => 0),
        'no hold left behind',
      );
    });
  }

  test('readers hold at once; a writer waits for all of them; fences increase across reads and writes', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const rw = locks.readWriteLock(uniqueResource('rw-share'));
    const readers = [];
    for (let i = 0; i < 5; i++) readers.push(await rw.read({ timeout: 0 }));
    for (let i = 1; i < readers.length; i++) assert.ok(readers[i]!.fence > readers[i - 1]!.fence, 'read fences increase');
    assert.equal(await rw.tryWrite(), null);
    const writing = settle(rw.write({ timeout: 10_000 }));
    for (const r of readers.slice(0, 4)) await r.release();
    await delay(100);
    assert.equal(await rw.tryRead(), null, 'no new reader while the writer waits');
    const started = performance.now();
    await readers[4]!.release();
    const w = await within(writing, 5_000, 'writer');
    assert.ok(w.ok, 'the writer got in');
    assert.ok(w.at - started < 1_000, `woken by the last reader's release (${Math.round(w.at - started)} ms)`);
    assert.ok(w.value.fence > readers[4]!.fence, 'the write fence exceeds every earlier read fence');
    assert.equal(await rw.tryRead(), null);
    assert.equal(await rw.tryWrite(), null);
    await w.value.release();
    const r = await rw.tryRead();
    assert.ok(r && r.fence > w.value.fence, 'a later read fence exceeds the write fence');
    await r.release();
  });

  test('a writer is not starved by a stream of overlapping readers', async (t) => {
    const locks = await readyManager(env(), 'node-redis', OPTIONS);
    const other = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('rw-starve');
    const rw = locks.readWriteLock(name);
    let streaming = true;
    let reads = 0;
    let readsWhileWaiting = 0;
    let writerWaiting = false;
    // 4 readers, each holding 150 ms and coming straight back: there is always a reader inside.
    const stream = async (): Promise<void> => {
      for (let i = 0; streaming && i < 200; i++) {
        await rw.withRead(async () => {
          reads++;
          if (writerWaiting) readsWhileWaiting++;
          await delay(150);
        });
      }
    };
    const streams = Array.from({ length: 4 }, async (_, i) => {
      await delay(i * 40);
      await stream();
    });
    await delay(400);
    assert.ok(reads >= 4, 'the reader stream runs');
    writerWaiting = true;
    const started = performance.now();
    const w = await other.readWriteLock(name).write({ timeout: 5_000 });
    const waited = performance.now() - started;
    writerWaiting = false;
    streaming = false;
    await w.release();
    await Promise.all(streams);
    t.diagnostic(`writer waited ${Math.round(waited)} ms; ${readsWhileWaiting} reads began while it waited`);
    assert.ok(waited < 2_000, `the writer got in within 2 s (waited ${Math.round(waited)} ms)`);
  });

  test('a writer that gives up withdraws its intent: readers get in again', async () => {
    const { admin } = env();
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('rw-intent');
    const rw = locks.readWriteLock(name);
    const reader = await rw.read();
    await assert.rejects(rw.write({ timeout: 300 }), LockTimeoutError);
    const intents = async (): Promise<number[]> => Promise.all(admin.map((a) => a.zcard(keyOf(name, 'write-intent'))));
    for (let i = 0; i < 100 && (await intents()).some((n) => n > 0); i++) await delay(10);
    assert.deepEqual(
      await intents(),
      admin.map(() => 0),
      'intent withdrawn',
    );
    const second = await rw.tryRead();
    assert.ok(second, 'readers are admitted again');
    await second.release();
    await reader.release();
  });

  test('crashed holders: a writer and a reader that never release free the lock when their leases end', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const rw = locks.readWriteLock(uniqueResource('rw-expiry'));
    const crashedWriter = await rw.tryWrite({ ttl: 600 });
    assert.ok(crashedWriter, 'write hold taken');
    let started = performance.now();
    const r = await rw.read({ timeout: 5_000 });
    assert.ok(performance.now() - started < 2_500, 'the reader got in soon after the writer lease ended');
    await r.release();
    const crashedReader = await rw.tryRead({ ttl: 600 });
    assert.ok(crashedReader, 'read hold taken');
    started = performance.now();
    const w = await rw.write({ timeout: 5_000 });
    assert.ok(performance.now() - started < 2_500, 'the writer got in soon after the reader lease ended');
    assert.ok(w.fence > crashedReader.fence, 'fences increase');
    await w.release();
  });

  test('loss: holds deleted behind their back fail the extension and abort the signal', async () => {
    const { admin } = env();
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('rw-loss');
    const rw = locks.readWriteLock(name);
    const w = await rw.write();
    await Promise.all(admin.map((a) => a.del(keyOf(name, 'writer'))));
    await assert.rejects(w.extend(), LockLostError);
    assert.ok(w.signal.reason instanceof LockLostError, 'writer signal aborted with LockLostError');
    const lost = rw.withRead(async (r) => {
      await Promise.all(admin.map((a) => a.del(keyOf(name, 'readers'))));
      assert.ok((await abortReason(r, 5_000)) instanceof LockLostError, 'reader signal aborts with LockLostError');
    });
    await assert.rejects(within(lost, 8_000, 'withRead'), LockLostError);
  });

  test('keys of another type fail with WRONGTYPE and are left alone', async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const name = uniqueResource('rw-type');
    const rw = locks.readWriteLock(name);
    await expectWrongType(env().admin, keyOf(name, 'readers'), () => rw.tryRead());
    await expectWrongType(env().admin, keyOf(name, 'write-intent'), () => rw.write({ timeout: 1_000 }));
  });

  test('bad input throws InvalidArgumentError before any network call', async () => {
    const locks = await readyManager(env(), 'node-redis', OPTIONS);
    const rw = locks.readWriteLock(uniqueResource('rw-bad'));
    await expectInvalidWithoutTraffic(env().admin, [
      ['empty name', () => locks.readWriteLock('')],
      ['array name', () => locks.readWriteLock(['a'] as unknown as string)],
      ['read ttl 0', () => rw.read({ ttl: 0 })],
      ['write ttl 1.5', () => rw.write({ ttl: 1.5 })],
      ['tryRead retry', () => rw.tryRead({ retry: { maxDelay: 0 } })],
      ['withWrite without a function', () => rw.withWrite(null as unknown as () => void)],
      ['withRead bad autoExtend', () => rw.withRead(() => 1, { autoExtend: 'yes' as unknown as boolean })],
    ]);
  });

  if (nodeCount === 5) {
    test('2 of 5 nodes down: reads and writes still work on the other 3', async () => {
      const locks = await readyManager(env(), 'ioredis', OPTIONS);
      const rw = locks.readWriteLock(uniqueResource('rw-minority'));
      await withNodesDown(env().nodes, [1, 4], async () => {
        const r = await rw.read({ timeout: 5_000 });
        assert.equal(await rw.tryWrite(), null);
        await r.extend();
        await r.release();
        const w = await rw.write({ timeout: 5_000 });
        assert.ok(w.fence > r.fence, 'fences still increase');
        assert.equal(await rw.tryRead(), null);
        await w.release();
      });
    });
  }
});
