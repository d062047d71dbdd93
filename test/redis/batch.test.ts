// Batched requests (src/redis/batch.ts, batch.lua): on several standalone nodes, the mutex acquires and releases
// of one turn go to each node as one script call, and each request still gets its own answer, its own error and
// its own fence. One node is not batched. Real redis-server nodes, both client libraries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeError, QuorumError, type Lock } from '../../src/index.js';
import { keysOf, lockValues, readyManager, uniqueResource, withNodeSets, scriptCalls } from '../lock-manager/helpers.js';

const OPTIONS = { ttl: 10_000, nodeTimeout: 500 };

withNodeSets('batched requests', [1, 3], (env, nodeCount) => {
  for (const kind of ['ioredis', 'node-redis'] as const) {
    test(`${kind}: 40 callers at once each get a lock of their own with a fence of their own, in ${nodeCount === 1 ? '80 calls' : 'fewer calls than requests'}`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      try {
        const resources = Array.from({ length: 40 }, () => uniqueResource('batch'));
        // Nodes trusted first (a new node's first grants each write their fence back: raise-fence.lua).
        await (await locks.acquire(uniqueResource('batch-warm-up'))).release();
        const before = await scriptCalls(admin);
        const held: Lock[] = await Promise.all(resources.map((r) => locks.acquire(r)));
        const fences = held.map((l) => l.fence);
        assert.equal(new Set(fences.map(String)).size, 40, `40 locks, 40 fences: ${fences.join(',')}`);
        for (const [i, lock] of held.entries()) {
          assert.deepEqual(
            await lockValues(admin, resources[i] as string),
            admin.map(() => lock.value),
            'held on every node',
          );
        }
        await Promise.all(held.map((l) => l.release()));
        for (const r of resources)
          assert.deepEqual(
            await lockValues(admin, r),
            admin.map(() => null),
            'released on every node',
          );
        const calls = (await scriptCalls(admin)).map((n, i) => n - (before[i] as number));
        if (nodeCount === 1) assert.deepEqual(calls, [80], 'one node: one call per acquire and per release');
        else
          assert.ok(
            calls.every((n) => n < 40),
            `3 nodes: 80 requests per node in fewer than 40 calls, got ${calls.join(',')}`,
          );
      } finally {
        await locks.close();
      }
    });
  }

  for (const kind of ['ioredis', 'node-redis'] as const)
    test(`${kind}: a request that fails in a batch fails alone: a key of another type under one lock name`, async () => {
      const { admin } = env();
      const locks = await readyManager(env(), kind, OPTIONS);
      try {
        const resources = Array.from({ length: 8 }, () => uniqueResource('batch-wrongtype'));
        const taken = resources[3] as string;
        // The user's own data where the lock key would be: a hash, on every node.
        await Promise.all(admin.map((a) => a.hset(keysOf(taken).lock, 'mine', 'yes')));
        const outcomes = await Promise.allSettled(resources.map((r) => locks.acquire(r, { timeout: 0 })));
        for (const [i, outcome] of outcomes.entries()) {
          if (i !== 3) {
            assert.equal(outcome.status, 'fulfilled', `${resources[i]}: acquired beside the failing one`);
            continue;
          }
          assert.equal(outcome.status, 'rejected');
          const error = (outcome as PromiseRejectedResult).reason as unknown;
          const causes = error instanceof QuorumError ? error.nodeErrors.map((f) => f.error) : [error];
          assert.ok(causes.length > 0 && causes.every((e) => e instanceof NodeError && /WRONGTYPE/.test(e.message)), String(error));
          assert.ok(
            causes.every((e) => /acquire script/.test((e as Error).message)),
            `the error names the script: ${String(causes[0])}`,
          );
        }
        for (const a of admin) assert.deepEqual(await a.hgetall(keysOf(taken).lock), { mine: 'yes' }, 'the user’s hash is untouched');
        await Promise.all(outcomes.flatMap((o) => (o.status === 'fulfilled' ? [(o.value as Lock).release()] : [])));
        await Promise.all(admin.map((a) => a.del(keysOf(taken).lock)));
      } finally {
        await locks.close();
      }
    });

  if (nodeCount > 1)
    test('a SIGSTOPped node: a turn of batched requests fails there within nodeTimeout, and the others grant every lock', async () => {
      const { admin, nodes } = env();
      const locks = await readyManager(env(), 'ioredis', OPTIONS);
      const resources = Array.from({ length: 20 }, () => uniqueResource('batch-hung'));
      try {
        await (await locks.acquire(uniqueResource('batch-warm-up'))).release();
        nodes.nodes[0]!.pause();
        const started = performance.now();
        const held = await Promise.all(resources.map((r) => locks.acquire(r, { timeout: 2_000 })));
        const took = performance.now() - started;
        assert.ok(took < OPTIONS.nodeTimeout + 400, `20 acquires with one node hung took ${Math.round(took)} ms`);
        assert.equal(new Set(held.map((l) => String(l.fence))).size, 20, 'a fence each');
        const released = await Promise.all(held.map((l) => l.release()));
        assert.ok(
          released.every((r) => r.released === nodeCount - 1),
          `released where granted: ${JSON.stringify(released[0])}`,
        );
      } finally {
        nodes.nodes[0]!.resume();
        await locks.close();
      }
      // Once resumed, the hung node runs the acquires it had queued; the releases that met it while it was
      // judged unresponsive failed at once, unsent, so what it holds of these locks lapses with the ttl.
      const pttls = await Promise.all(resources.map((r) => admin[0]!.pttl(keysOf(r).lock)));
      assert.ok(
        pttls.every((ms) => ms === -2 || (ms > 0 && ms <= OPTIONS.ttl)),
        `what node 0 keeps expires on its own: ${pttls.join(',')}`,
      );
    });
});
