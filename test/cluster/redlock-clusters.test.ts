// Three independent Redis Clusters as the three nodes of a Redlock quorum
// (3 masters and no replicas each, to keep it light): each cluster is one vote,
// whatever the number of its masters.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { LockManager, type LockManagerOptions } from '../../src/index.js';
import { keysFor, slotMarkerFor } from '../../src/redis/keys.js';
import { startRedisCluster, type LocalRedisCluster } from '../../src/testing/index.js';
import { delay } from '../support/harness.js';
import { clusterClient, contend, resource, type ClusterClient } from './helpers.js';

const OPTIONS: LockManagerOptions = { ttl: 3_000, nodeTimeout: 200, acquireTimeout: 20_000 };

describe('Redlock over 3 independent Redis Clusters', () => {
  let clusters: LocalRedisCluster[] = [];
  const open: Array<{ manager: LockManager; clients: ClusterClient[] }> = [];
  before(async () => {
    const started = await Promise.allSettled([0, 1, 2].map(() => startRedisCluster({ masters: 3, replicasPerMaster: 0 })));
    clusters = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  });
  after(async () => {
    for (const { manager, clients } of open.splice(0)) {
      await manager.close();
      for (const c of clients) c.close();
    }
    await Promise.all(clusters.map((c) => c.stop()));
  });

  /** A manager whose three nodes are one Cluster client per cluster, all of one library. */
  const manager = async (kind: 'ioredis' | 'node-redis', options: LockManagerOptions = OPTIONS): Promise<LockManager> => {
    const clients = await Promise.all(clusters.map((c) => clusterClient(kind, c)));
    const m = new LockManager(
      clients.map((c) => c.client),
      options,
    );
    open.push({ manager: m, clients });
    return m;
  };

  test('mutual exclusion under contention: ioredis and node-redis managers, 2 contenders each, never overlap', async () => {
    const list = await Promise.all(['ioredis', 'node-redis', 'ioredis', 'node-redis'].map((k) => manager(k as 'ioredis' | 'node-redis')));
    assert.equal(list[0]!.quorum, 2, 'three clusters, quorum 2');
    const name = resource('redlock-contention');
    const { overlaps, shared, fences } = await contend(list, name, 6);
    assert.equal(overlaps, 0, 'no two holders at once');
    assert.equal(shared, 48, 'no lost increment');
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fence ${fences[i]} follows ${fences[i - 1]}`);
  });

  test('a cluster that lost its data (FLUSHALL on its masters): the other two serve at once, its slot is quarantined, then repaired', async () => {
    const m = await manager('ioredis');
    const name = resource('redlock-flushed');
    const first = await m.acquire(name);
    await first.release();
    const marker = slotMarkerFor('fencelock:', keysFor('fencelock:', name).lock);
    const flushed = clusters[1]!;
    await Promise.all(
      (await flushed.masters()).map(async (master) => {
        const admin = new Redis(master.port, master.host, { maxRetriesPerRequest: 1 });
        try {
          await admin.flushall();
        } finally {
          admin.disconnect();
        }
      }),
    );
    const quarantined = new Promise<{ node: string; until: number }>((resolve) => m.once('nodeQuarantined', resolve));
    const repaired = new Promise<{ node: string; countersRaised: number }>((resolve) => m.once('nodeRepaired', resolve));
    // A minority lost its data: the two trusted clusters alone are a quorum, no waiting.
    const second = await m.acquire(name, { timeout: 0 });
    assert.ok(second.fence > first.fence, 'the fence still rises');
    await second.release();
    const q = await quarantined;
    assert.ok(q.until > Date.now(), 'the flushed cluster’s slot is in quarantine (until the longest ttl, 3 s, has passed)');
    const r = await Promise.race([repaired, delay(10_000).then(() => undefined)]);
    assert.ok(r, 'repaired within 10 s');
    assert.equal(r.countersRaised, 1, 'one slot marker');
    const client = await clusterClient('ioredis', flushed);
    try {
      const cluster = client.client as Cluster;
      assert.equal(await cluster.hget(marker, 'trusted'), '1', 'the slot is trusted again');
      assert.ok(BigInt((await cluster.hget(marker, 'fence')) ?? '0') >= second.fence, 'its counter raised to at least the last fence');
    } finally {
      client.close();
    }
  });

  test('a killed cluster (all its masters SIGKILLed) is tolerated: the lock stays exclusive, acquire and extend go on with 2 of 3', async (t) => {
    const a = await manager('ioredis');
    const b = await manager('node-redis');
    const name = resource('redlock-killed');
    const lockA = await a.acquire(name);

    await Promise.all(clusters[2]!.nodes.map((n) => n.kill('SIGKILL')));
    await lockA.extend();
    assert.ok(lockA.isValid(), 'A extends on the two clusters left');
    assert.equal(await b.tryAcquire(name), null, 'B is refused: A still holds a quorum');
    await lockA.release();

    // Contention on the remaining two clusters (both must agree now), the dead one failing each call within nodeTimeout.
    const contenders = [a, b, a, b];
    let inside = 0;
    let overlaps = 0;
    const fences: bigint[] = [lockA.fence];
    const times: number[] = [];
    await Promise.all(
      contenders.map(async (m) => {
        for (let round = 0; round < 4; round++) {
          const start = performance.now();
          await m.withLock(name, async (lock) => {
            times.push(performance.now() - start);
            inside++;
            if (inside > 1) overlaps++;
            fences.push(lock.fence);
            await delay(1);
            inside--;
          });
        }
      }),
    );
    assert.equal(overlaps, 0, 'no two holders at once with one cluster down');
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fence ${fences[i]} follows ${fences[i - 1]}`);
    // Uncontended, one manager of each library: the dead cluster must cost at most nodeTimeout per round.
    for (const [kind, m] of [
      ['ioredis', a],
      ['node-redis', b],
    ] as const) {
      const start = performance.now();
      const alone = await m.acquire(name);
      const ms = performance.now() - start;
      await alone.release();
      t.diagnostic(`${kind}: uncontended acquire with one cluster down took ${Math.round(ms)} ms`);
      assert.ok(
        ms < OPTIONS.nodeTimeout! + 500,
        `${kind}: an acquire with a dead cluster took ${Math.round(ms)} ms, bounded by nodeTimeout`,
      );
    }
    t.diagnostic(`contended waits with one cluster down: max ${Math.round(Math.max(...times))} ms over ${times.length} holds`);
  });
});
