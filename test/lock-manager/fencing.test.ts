// Fencing tokens: multi-resource fences, write-back to the quorum, and what inspect() reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLIENT_KINDS } from '../support/harness.js';
import { NODE_COUNTS, readyManager, keysOf, lockValues, uniqueResource, withNodeSets } from './helpers.js';

/** Every node's marker: its epoch, trust, and the fence counter of every resource (src/redis/scripts/_node-state.lua). */
const MARKER = 'fencelock:{node}:epoch';

const OPTIONS = { ttl: 2000, nodeTimeout: 100, acquireTimeout: 5000 };

withNodeSets('fencing', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: successive holders of one resource get strictly increasing fences`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const other = await readyManager(env(), kind, OPTIONS);
      const resource = uniqueResource('seq');
      const fences: bigint[] = [];
      for (let i = 0; i < 6; i++) {
        const lock = await (i % 2 === 0 ? locks : other).acquire(resource);
        fences.push(lock.fence);
        await lock.release();
      }
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(', ')} not strictly increasing`);
      assert.equal(typeof fences[0], 'bigint');
      assert.ok(fences[0]! >= 1n, `first fence ${fences[0]}`);
    });

    test(`${kind}: a multi-resource lock's fence exceeds the previous fence of each resource, also one kept by fencelock 0.1`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const { admin } = env();
      const a = uniqueResource('multi-a');
      const b = uniqueResource('multi-b');
      const lockB = await locks.acquire(b);
      const lastB = lockB.fence;
      await lockB.release();
      // An upgrade from 0.1, which kept a counter per resource: a's store saw fences up to that one.
      const lastA = lastB + 1_000n;
      await Promise.all(admin.map((x) => x.hset(keysOf(a).fence, 'n', String(lastA), 't', '1')));

      const both = await locks.acquire([b, a]);
      try {
        assert.deepEqual(both.resources, [a, b].sort());
        assert.ok(both.fence > lastA, `multi fence ${both.fence} not above ${lastA} (a)`);
        assert.ok(both.fence > lastB, `multi fence ${both.fence} not above ${lastB} (b)`);
        // all or nothing: both keys hold the same owner token on every node
        assert.deepEqual(
          await lockValues(admin, a),
          admin.map(() => both.value),
        );
        assert.deepEqual(
          await lockValues(admin, b),
          admin.map(() => both.value),
        );
      } finally {
        await both.release();
      }
      assert.deepEqual(
        await lockValues(admin, a),
        admin.map(() => null),
      );
      assert.deepEqual(
        await lockValues(admin, b),
        admin.map(() => null),
      );

      // 0.1's counter was folded into the node's and removed: nothing per resource is left behind.
      assert.deepEqual(
        await Promise.all(admin.map((x) => x.exists(keysOf(a).fence))),
        admin.map(() => 0),
      );
      // The next holder of either resource alone is above the multi-resource fence.
      const nextB = await locks.acquire(b);
      assert.ok(nextB.fence > both.fence, `fence of b ${nextB.fence} not above multi fence ${both.fence}`);
      await nextB.release();
      const nextA = await locks.acquire(a);
      assert.ok(nextA.fence > both.fence, `fence of a ${nextA.fence} not above multi fence ${both.fence}`);
      await nextA.release();
    });

    test(`${kind}: a multi-resource lock is all or nothing when one resource is held`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const other = await readyManager(env(), kind, OPTIONS);
      const { admin } = env();
      const a = uniqueResource('aon-a');
      const b = uniqueResource('aon-b');
      const holder = await other.acquire(b);
      try {
        assert.equal(await locks.tryAcquire([a, b]), null);
        // nothing of the failed attempt is left on a, and b still belongs to its holder
        assert.deepEqual(
          await lockValues(admin, a),
          admin.map(() => null),
        );
        assert.deepEqual(
          await lockValues(admin, b),
          admin.map(() => holder.value),
        );
      } finally {
        await holder.release();
      }
      const both = await locks.tryAcquire([a, b]);
      assert.ok(both, 'both resources free: tryAcquire should succeed');
      await both.release();
    });

    test(`${kind}: the fence is the largest counter of the quorum and is written back`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const { admin } = env();
      const resource = uniqueResource('writeback');
      const first = await locks.acquire(resource);
      await first.release();
      // One node ran ahead (e.g. it took part in acquires the others missed). The others lag by different
      // amounts, so no quorum of them agrees on a fence: the round is not decided by the first quorum heard
      // (redlock.ts firstClear, test/redis/first-clear.test.ts) but waits for every reply, node 0's too.
      const ahead = first.fence + 1_000n;
      await admin[0]!.hset(MARKER, 'fence', String(ahead));
      for (const [i, a] of admin.entries()) if (i > 0) await a.hset(MARKER, 'fence', String(first.fence + BigInt(i)));
      const lock = await locks.acquire(resource);
      try {
        assert.equal(lock.fence, ahead + 1n);
        const counters = await Promise.all(admin.map((a) => a.hget(MARKER, 'fence')));
        // every node that granted the lock now has at least the fence
        for (const [i, c] of counters.entries())
          assert.ok(BigInt(c ?? '0') >= lock.fence, `node ${i} counter ${c} below fence ${lock.fence}`);
      } finally {
        await lock.release();
      }
    });

    test(`${kind}: inspect() reports the holder, the remaining lease and the fence counter per node`, async () => {
      const locks = await readyManager(env(), kind, OPTIONS);
      const observer = await readyManager(env(), kind, OPTIONS);
      const { admin } = env();
      const resource = uniqueResource('inspect');

      const counter = await admin[0]!.hget(MARKER, 'fence');
      const empty = await observer.inspect(resource);
      assert.equal(empty.resource, resource);
      assert.equal(empty.holder, null);
      assert.equal(empty.fence, BigInt(counter ?? '0'), 'the node counter: the next fence exceeds it');
      assert.equal(empty.quorum, Math.floor(nodeCount / 2) + 1);
      assert.equal(empty.nodes.length, nodeCount);
      for (const n of empty.nodes) {
        assert.equal(n.owner, null);
        assert.equal(n.error, null);
        assert.equal(n.remaining, 0);
        assert.equal(n.waiters, 0);
        assert.equal(n.state, 'trusted', 'nodes that kept their data since the deployment began');
        assert.equal(n.quarantinedFor, 0);
      }

      const lock = await locks.acquire(resource, { ttl: 1500 });
      try {
        const info = await observer.inspect(resource);
        assert.equal(info.holder, lock.value);
        assert.equal(info.fence, lock.fence);
        assert.equal(new Set(info.nodes.map((n) => n.node)).size, nodeCount, 'nodes are named distinctly');
        for (const n of info.nodes) {
          assert.equal(n.owner, lock.value);
          assert.equal(n.fence, lock.fence);
          assert.equal(n.error, null);
          assert.ok(n.remaining > 0 && n.remaining <= 1500, `remaining ${n.remaining}`);
        }

        // A different owner on node 0 (and a counter ahead there): inspect shows it per node.
        await admin[0]!.set(keysOf(resource).lock, 'intruder', 'PX', 5000);
        await admin[0]!.hset(MARKER, 'fence', String(lock.fence + 77n));
        const mixed = await observer.inspect(resource);
        assert.equal(mixed.nodes[0]!.owner, 'intruder');
        assert.equal(mixed.nodes[0]!.fence, lock.fence + 77n);
        assert.equal(mixed.fence, lock.fence + 77n, 'the largest counter of any node');
        // with one node the intruder is the quorum; with five, the lock still has 4 of 5
        assert.equal(mixed.holder, nodeCount === 1 ? 'intruder' : lock.value);
        for (const n of mixed.nodes.slice(1)) assert.equal(n.owner, lock.value);
        // read-only: inspect changed nothing
        assert.deepEqual(
          await lockValues(admin, resource),
          admin.map((_, i) => (i === 0 ? 'intruder' : lock.value)),
        );
      } finally {
        await lock.release();
        await admin[0]!.del(keysOf(resource).lock);
      }
      const after = await observer.inspect(resource);
      assert.equal(after.holder, null);
      assert.ok(after.fence >= lock.fence, 'the counter survives the release');
    });
  }
});
