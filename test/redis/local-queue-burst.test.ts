// The burst cases of issue 25, scaled to the suite's time: thousands of callers of one key in one process
// (one node, five nodes), two processes' worth of callers (two managers), and distinct keys. Every acquire
// has time left (60 s) and must succeed: none may end in QuorumError because of this process's own load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LockManager } from '../../src/index.js';
import { readyManager, uniqueResource, within, withNodeSets } from '../lock-manager/helpers.js';

const OPTIONS = { acquireTimeout: 60_000 };

/** `count` callers of `key(i)` at once, each acquire + release: failures counted, the first kept. */
async function burst(locks: LockManager, count: number, key: (i: number) => string): Promise<{ failed: number; first: string }> {
  let failed = 0;
  let first = '';
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      locks.acquire(key(i)).then(
        (lock) => lock.release(),
        (error: unknown) => {
          failed++;
          first ||= String(error);
        },
      ),
    ),
  );
  return { failed, first };
}

withNodeSets('burst', [1, 5], (env, nodeCount) => {
  const oneKey = nodeCount === 1 ? 3000 : 1000;
  test(`one key, ${oneKey} callers in one process: all succeed`, async () => {
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    const resource = uniqueResource('flash-sale');
    const result = await within(
      burst(locks, oneKey, () => resource),
      55_000,
      'the burst',
    );
    assert.equal(result.failed, 0, `first failure: ${result.first}`);
    // Fences of one resource increase with every holder: the count of holders shows each caller held it once.
    const lock = await locks.acquire(resource);
    await lock.release();
    assert.ok(lock.fence > BigInt(oneKey), `fence ${lock.fence} after ${oneKey} holders`);
  });

  test('one key, two managers (processes) × 500 callers: all succeed', async () => {
    const a = await readyManager(env(), 'ioredis', OPTIONS);
    const b = await readyManager(env(), 'ioredis', OPTIONS);
    const resource = uniqueResource('two-procs');
    const [ra, rb] = await within(Promise.all([burst(a, 500, () => resource), burst(b, 500, () => resource)]), 55_000, 'the bursts');
    assert.equal(ra.failed + rb.failed, 0, `first failure: ${ra.first || rb.first}`);
  });

  if (nodeCount === 1)
    test('distinct keys, 4000 callers: all succeed', async () => {
      const locks = await readyManager(env(), 'ioredis', OPTIONS);
      const prefix = uniqueResource('distinct');
      const r = await within(
        burst(locks, 4000, (i) => `${prefix}-${i}`),
        55_000,
        'the burst',
      );
      assert.equal(r.failed, 0, `first failure: ${r.first}`);
    });
});
