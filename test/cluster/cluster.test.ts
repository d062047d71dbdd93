// One Redis Cluster (3 masters, 1 replica each) as ONE fencelock node, through
// ioredis `Cluster` and node-redis `createCluster`: single resources,
// contention, release notifications, auto-extension and multi-resource locks.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import type { Lock, LockManager, LockManagerOptions } from '../../src/index.js';
import { clusterKeySlot, startRedisCluster, startRedisNode, type LocalRedisCluster, type LocalRedisNode } from '../../src/testing/index.js';
import { CLIENT_KINDS, delay, eventually } from '../support/harness.js';
import { contend, keysOf, Managers, nodeAdmin, resource, slotOf } from './helpers.js';

// The default restartQuarantine ('auto'), with one marker per hash slot on a Cluster node.
const OPTIONS: LockManagerOptions = { ttl: 3_000, nodeTimeout: 200 };

describe('one Redis Cluster as one node', () => {
  let cluster: LocalRedisCluster;
  const managers = new Managers(() => cluster);
  before(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
  });
  after(async () => {
    await managers.closeAll();
    await cluster?.stop();
  });

  test('startRedisCluster: 3 masters with a replica each serve all 16384 slots; clusterKeySlot agrees with CLUSTER KEYSLOT', async () => {
    assert.equal(cluster.nodes.length, 6, 'six redis-server processes');
    const ports = cluster.nodes.map((n) => n.port);
    assert.equal(new Set(ports).size, 6, 'distinct ports');
    for (const p of ports) assert.ok(p + 10_000 <= 65_535 && p !== 6379, `port ${p} leaves room for its cluster bus port and is not 6379`);
    const masters = await cluster.masters();
    assert.equal(masters.length, 3, 'three masters');
    const topology = await cluster.topology();
    const covered = topology.flatMap((t) => t.slots).reduce((sum, [a, b]) => sum + (b - a + 1), 0);
    assert.equal(covered, 16_384, 'the masters serve every slot exactly once');
    for (const m of masters) assert.equal((await cluster.replicaOf(m)).length, 1, `${m.url} has one replica`);
    assert.equal(await cluster.masterOf(0), masters[0], 'masters() is ordered by first slot');

    const admin = new Redis(masters[0]!.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      for (const key of ['', 'a', 'fencelock:{r}:lock', '{user1000}.following', 'x{}y', '{}{a}', 'ünïcødé{ß}', keysOf('a{b}c%').lock]) {
        assert.equal(clusterKeySlot(key), await admin.call('CLUSTER', 'KEYSLOT', key), `slot of ${JSON.stringify(key)}`);
      }
    } finally {
      admin.disconnect();
    }
  });

  test('startRedisCluster and cluster nodes reject bad arguments before starting anything', async () => {
    await assert.rejects(startRedisCluster({ masters: 2 }), RangeError, 'fewer than 3 masters');
    await assert.rejects(startRedisCluster({ replicasPerMaster: -1 }), RangeError, 'negative replicas');
    await assert.rejects(startRedisNode({ cluster: true, port: 60_000 }), /at most|\[1, 55535\]/, 'no room for the bus port above 55535');
  });

  test('locking 10,000 distinct resources leaves at most one marker per hash slot behind, and nothing per resource', async () => {
    const m = await managers.make('ioredis', OPTIONS);
    const masters = await cluster.masters();
    const admins = await Promise.all(masters.map((n) => nodeAdmin(n)));
    try {
      const count = async (pattern: string): Promise<number> =>
        (await Promise.all(admins.map(async (a) => (await a.keys(pattern)).length))).reduce((x, y) => x + y, 0);
      const names = Array.from({ length: 10_000 }, (_, i) => `bounded:${i}`);
      const before = await count('*');
      const markersBefore = await count('fencelock:*:node');
      for (let i = 0; i < names.length; i += 100) {
        await Promise.all(names.slice(i, i + 100).map(async (name) => (await m.acquire(name)).release()));
      }
      const slots = new Set(names.map((n) => slotOf(n)));
      const markers = await count('fencelock:*:node');
      assert.ok(markers <= markersBefore + slots.size, `${markers} markers: at most one per slot touched (${slots.size})`);
      assert.equal(await count('*'), before + (markers - markersBefore), 'no other key is left: nothing per resource');
      assert.ok(markers <= 16_384, 'bounded by the slots, not by the resources');
    } finally {
      for (const a of admins) a.disconnect();
    }
  });

  for (const kind of CLIENT_KINDS) {
    describe(kind, () => {
      test('acquire and release one resource: lock, fence and marker sit in one slot on the master serving it', async () => {
        const a = await managers.make(kind, OPTIONS);
        const b = await managers.make(kind, OPTIONS);
        const name = resource(`single-${kind}`);
        const keys = keysOf(name);
        const slot = slotOf(name);
        for (const key of [keys.fence, keys.channel, keys.slotMarker])
          assert.equal(clusterKeySlot(key), slot, `${key} shares the lock's slot`);

        const first = await a.acquire(name);
        assert.ok(first.fence >= 1n, 'a fence from the slot counter');
        assert.equal(await b.tryAcquire(name), null, 'another manager is refused while the lock is held');
        const admin = await nodeAdmin(await cluster.masterOf(slot));
        try {
          assert.equal(await admin.get(keys.lock), first.value, 'the master serving the slot holds the owner token');
          assert.equal(await admin.hget(keys.slotMarker, 'fence'), String(first.fence), 'and the slot marker, with the fence counter');
          assert.ok((await admin.hget(keys.slotMarker, 'epoch')) !== null, 'and its epoch');
          assert.equal(await admin.exists(keys.fence), 0, 'no per-resource counter');
          const info = await b.inspect(name);
          assert.equal(info.holder, first.value, 'inspect reports the holder');
          assert.equal((await first.release()).released, 1, 'released on the one node');
          assert.equal(await admin.get(keys.lock), null, 'the lock key is gone');
        } finally {
          admin.disconnect();
        }
        const second = await b.acquire(name);
        assert.ok(second.fence > first.fence, 'the next holder gets a larger fence');
        await second.release();
      });

      test('mutual exclusion under contention: 3 managers x 2 contenders x 8 rounds never overlap, fences grow', async () => {
        const list = await Promise.all([0, 1, 2].map(() => managers.make(kind, { ...OPTIONS, acquireTimeout: 20_000 })));
        const name = resource(`contention-${kind}`);
        const { overlaps, shared, fences } = await contend(list, name, 8);
        assert.equal(overlaps, 0, 'no two holders at once');
        assert.equal(shared, 48, 'no lost increment');
        for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fence ${fences[i]} follows ${fences[i - 1]}`);
      });

      test('a waiter is woken by the release notification, not by its backoff timer', async (t) => {
        const holder = await managers.make(kind, { ...OPTIONS, ttl: 20_000 });
        const waiter = await managers.make(kind, { ...OPTIONS, ttl: 20_000 });
        const name = resource(`notify-${kind}`);
        const lock = await holder.acquire(name);
        const reasons: string[] = [];
        waiter.on('retry', (info) => reasons.push(info.reason));
        // Backoff alone would retry after 5 s: only the notification can make it faster.
        const waiting = waiter.acquire(name, { timeout: 15_000, retry: { minDelay: 5_000, maxDelay: 5_000, jitter: 'none' } });
        // Wait until the waiter is subscribed somewhere in the cluster (PUBLISH reaches every node's subscribers).
        const channel = keysOf(name).channel;
        await eventually(async () => (await subscribers(cluster, channel)).size > 0, 5_000, 20);
        const on = [...(await subscribers(cluster, channel))].map((n) => n.port);
        const publisher = (await cluster.masterOf(slotOf(name))).port;
        t.diagnostic(`subscribed on node(s) ${on.join(',')}; the release publishes on master ${publisher}`);
        const released = performance.now();
        await lock.release();
        const got = await waiting;
        const latency = performance.now() - released;
        t.diagnostic(`release to waiter's acquire: ${latency.toFixed(1)} ms`);
        assert.ok(latency < 2_000, `woken ${Math.round(latency)} ms after the release, well before the 5 s backoff`);
        assert.ok(reasons.includes('notified'), `a retry was triggered by a notification (reasons: ${reasons.join(',')})`);
        await got.release();
      });

      test('withLock keeps extending the lease on a Cluster node past its ttl', async () => {
        const m = await managers.make(kind, { ...OPTIONS, ttl: 600, nodeTimeout: 100 });
        const name = resource(`extend-${kind}`);
        let extended = 0;
        m.on('extended', () => extended++);
        const held = await m.withLock(name, async (lock) => {
          await delay(1_500); // held for 2.5 ttl: only extensions keep it
          return lock.isValid();
        });
        assert.equal(held, true, 'still valid after 2.5 ttl');
        assert.ok(extended >= 3, `extended ${extended} times`);
      });

      test('multi-resource lock over resources in different slots is all-or-nothing, with one fence above both resources', async () => {
        const a = await managers.make(kind, OPTIONS);
        const b = await managers.make(kind, OPTIONS);
        const [m0, m1] = await cluster.masters();
        const topology = await cluster.topology();
        const servedBy = (node: LocalRedisNode | undefined): ((slot: number) => boolean) => {
          const ranges = topology.find((t) => t.node === node)?.slots ?? [];
          return (slot) => ranges.some(([lo, hi]) => lo <= slot && slot <= hi);
        };
        const x = resource(`multi-x-${kind}`, servedBy(m0));
        const y = resource(`multi-y-${kind}`, servedBy(m1));
        assert.notEqual(slotOf(x), slotOf(y), 'the two resources hash to different slots (and masters)');

        let both: Lock | undefined;
        try {
          both = await a.acquire([x, y], { timeout: 2_000 });
        } catch (error) {
          assert.fail(`multi-resource acquire over two slots failed: ${(error as Error).message}`);
        }
        assert.equal(await b.tryAcquire(x), null, 'x is held by the multi-resource lock');
        assert.equal(await b.tryAcquire(y), null, 'y is held by the multi-resource lock');
        await both.release();

        // All or nothing: with y held elsewhere, [x, y] is refused and x is left free.
        const onlyY = await b.acquire(y);
        assert.ok(onlyY.fence > both.fence, `y's next fence ${onlyY.fence} is above the two-slot lock's ${both.fence}`);
        assert.equal(await a.tryAcquire([x, y]), null, '[x, y] is refused while y is held');
        const xAlone = await a.tryAcquire(x);
        assert.ok(xAlone, 'x was not left locked by the refused attempt');
        assert.ok(xAlone.fence > both.fence, `x's next fence ${xAlone.fence} is above the two-slot lock's ${both.fence}`);
        await xAlone.release();
        await onlyY.release();

        // Held past its ttl, both slot groups are extended.
        const short = await managers.make(kind, { ...OPTIONS, ttl: 600, nodeTimeout: 150 });
        const valid = await short.withLock([x, y], async (lock) => {
          await delay(1_500);
          return lock.isValid();
        });
        assert.equal(valid, true, 'a two-slot lock is kept alive by extension');
        assert.equal(await b.tryAcquire([x, y]).then((l) => l?.release().then(() => 'free')), 'free', 'both released after withLock');
      });

      test('semaphore on a Cluster node: the limit holds under contention, a waiter gets the freed permit', async () => {
        const list = await Promise.all([0, 1, 2].map(() => managers.make(kind, OPTIONS)));
        const name = resource(`sem-${kind}`);
        let inside = 0;
        let most = 0;
        await Promise.all(
          list.flatMap((m) =>
            [0, 1, 2].map(async () => {
              const sem = m.semaphore(name, { limit: 2 });
              for (let round = 0; round < 4; round++) {
                await sem.withPermit(async () => {
                  inside++;
                  most = Math.max(most, inside);
                  await delay(2);
                  inside--;
                });
              }
            }),
          ),
        );
        assert.equal(most, 2, 'never more than the limit of 2 holders, and the limit was reached');
        const sem = (list[0] as LockManager).semaphore(name, { limit: 1 });
        const first = await sem.acquire();
        const waiting = (list[1] as LockManager).semaphore(name, { limit: 1 }).acquire({ timeout: 3_000 });
        await first.release();
        const second = await waiting;
        assert.ok(second.fence > first.fence, 'the waiter got the permit with a larger fence');
        await second.release();
      });

      test('read-write lock on a Cluster node: readers share, a writer excludes them', async () => {
        const [a, b] = await Promise.all([managers.make(kind, OPTIONS), managers.make(kind, OPTIONS)]);
        const name = resource(`rw-${kind}`);
        const r1 = await (a as LockManager).readWriteLock(name).read();
        const r2 = await (b as LockManager).readWriteLock(name).read();
        assert.equal(await (b as LockManager).readWriteLock(name).tryWrite(), null, 'no writer while readers hold it');
        const writing = (a as LockManager).readWriteLock(name).write({ timeout: 3_000 });
        await r1.release();
        await r2.release();
        const w = await writing;
        assert.equal(await (b as LockManager).readWriteLock(name).tryRead(), null, 'no reader while the writer holds it');
        assert.ok(w.fence > r1.fence && w.fence > r2.fence, 'the write fence is above both read fences');
        await w.release();
      });

      test('multi-resource lock over resources that happen to share a slot works (one script on one master)', async () => {
        const a = await managers.make(kind, OPTIONS);
        const b = await managers.make(kind, OPTIONS);
        const x = resource(`same-x-${kind}`);
        const y = resource(`same-y-${kind}`, (slot) => slot === slotOf(x));
        const both = await a.acquire([x, y], { timeout: 2_000 });
        assert.equal(await b.tryAcquire(x), null, 'x is held');
        assert.equal(await b.tryAcquire(y), null, 'y is held');
        await both.release();
        const again = await b.acquire([x, y], { timeout: 2_000 });
        assert.ok(again.fence > both.fence, 'the next multi-resource holder gets a larger fence');
        await again.release();
      });
    });
  }

  test('default restartQuarantine: a second resource on a Cluster node is not mistaken for data loss', async () => {
    const m = await managers.make('ioredis', { ttl: 3_000, nodeTimeout: 200 });
    await (await m.acquire(resource('quarantine-first'))).release();
    // The second resource's marker is a different key with its own epoch: 'observed' takes it for a node that lost its data.
    const second = await m.acquire(resource('quarantine-second'), { timeout: 1_000 });
    await second.release();
  });
});

/** The running nodes that have a subscriber on `channel` (a Cluster client subscribes on one node of its choice). */
async function subscribers(cluster: LocalRedisCluster, channel: string): Promise<Set<LocalRedisNode>> {
  const found = new Set<LocalRedisNode>();
  for (const node of cluster.nodes.filter((n) => n.isRunning())) {
    const admin = await nodeAdmin(node);
    try {
      const reply = (await admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
      if (Number(reply[1]) > 0) found.add(node);
    } finally {
      admin.disconnect();
    }
  }
  return found;
}
