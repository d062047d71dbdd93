// acquire({ autoExtend }): leases kept alive without withLock, and extensions of many locks batched per node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { Lock } from '../../src/index.js';
import { CLIENT_KINDS, eventually } from '../support/harness.js';
import { NODE_COUNTS, lockValues, readyManager, uniqueResource, within, withNodeSets } from './helpers.js';

const OPTIONS = { ttl: 600, nodeTimeout: 90, acquireTimeout: 5000 };

/** Script calls (EVALSHA + EVAL) a node has run since its stats were reset. */
async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) calls += Number(m[2]);
  return calls;
}

withNodeSets('acquire with autoExtend', NODE_COUNTS, (env) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: keeps a 600 ms lease alive for 2 s until release, then stops`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('auto');
      let extended = 0;
      locks.on('extended', () => extended++);
      const lock = await locks.acquire(resource, { autoExtend: true });
      // Three lease lengths: without extension the lock would be lost twice over.
      await eventually(() => extended >= 6, 5000);
      assert.ok(lock.isValid(), 'still valid after several lease lengths');
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => lock.value),
      );
      await lock.release();
      const after = extended;
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(extended, after, 'no extension after release');
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
    });

    test(`${kind}: maxHold ends auto-extension; the lock is then lost`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const lock = await locks.acquire(uniqueResource('maxhold'), { autoExtend: true, maxHold: 700 });
      const reason = await within(
        new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true })),
        5000,
        'loss after maxHold',
      );
      assert.equal((reason as { code?: string }).code, 'LOCK_LOST');
    });

    test(`${kind}: 200 locks due together extend with a few script calls per node, not 200`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, { ...OPTIONS, ttl: 3000 });
      const resources = Array.from({ length: 200 }, (_, i) => uniqueResource(`batch${i}`));
      // Taken 50 at a time: 1,000 script calls at once can outlast the 90 ms nodeTimeout on a loaded 2-core machine.
      const held: Lock[] = [];
      for (let i = 0; i < resources.length; i += 50)
        held.push(...(await Promise.all(resources.slice(i, i + 50).map((r) => locks.acquire(r, { autoExtend: true })))));
      try {
        await Promise.all(admin.map((a) => a.config('RESETSTAT')));
        let extended = 0;
        locks.on('extended', () => extended++);
        // One round: every lock extends once, about ttl / 3 after it was taken.
        await eventually(() => extended >= held.length, 5000);
        const calls = await Promise.all(admin.map(scriptCalls));
        for (const [i, c] of calls.entries()) assert.ok(c <= 20, `node ${i} ran ${c} script calls for ${held.length} extensions`);
        assert.ok(
          held.every((l) => l.isValid()),
          'every lock still valid',
        );
      } finally {
        await Promise.all(held.map((l) => l.release()));
      }
    });
  }
});
