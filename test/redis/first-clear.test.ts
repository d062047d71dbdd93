// A first attempt on several nodes (and a release's hand-over inside the process) is decided by the replies heard first (redlock.ts firstClear): once a quorum of
// trusted nodes granted with one fence, the acquire resolves, and the other nodes' replies are heard after it
// (lateReply). Here one node's client holds back the acquire script (fixtures/held-back.ts), so its reply comes
// last by construction.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, type Lock, type NodeErrorEvent } from '../../src/index.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { scripts } from '../../src/redis/scripts/index.js';
import { eventually } from '../support/harness.js';
import { holdBack } from './fixtures/held-back.js';

const HELD_BACK_MS = 400;
const MARKER = 'fencelock:{node}:epoch';
const LOCK = (resource: string): string => `fencelock:{${resource}}:lock`;
const QUEUE = (resource: string): string => `fencelock:{${resource}}:queue`;
const nodeUrl = (client: Redis): string => `redis://${client.options.host ?? '127.0.0.1'}:${String(client.options.port)}`;

const counterOf = async (admin: Redis): Promise<bigint> => BigInt((await admin.hget(MARKER, 'fence')) ?? '0');

async function withNodes(work: (clients: Redis[], admin: Redis[], locks: LockManager) => Promise<void>): Promise<void> {
  const nodes = await startRedisNodes(3);
  const clients = nodes.urls.map((url) => new Redis(url));
  const admin = nodes.urls.map((url) => new Redis(url));
  const locks = new LockManager(clients, { ttl: 10_000, nodeTimeout: 2_000 });
  try {
    // Every node trusted and known to the manager (its epochs seen): the clear path's conditions.
    await (await locks.acquire('warm-up')).release();
    await work(clients, admin, locks);
  } finally {
    await locks.close();
    for (const c of [...clients, ...admin]) c.disconnect();
    await nodes.stop();
  }
}

describe('a first attempt decided by the quorum heard first', () => {
  test('a slow node delays no acquire; its late grant is the lock’s too, and the release takes it back', async () => {
    await withNodes(async (clients, admin, locks) => {
      const slow = holdBack(clients[2] as Redis, scripts.acquire, HELD_BACK_MS);
      const started = performance.now();
      const lock = await locks.acquire('quick');
      const took = performance.now() - started;
      assert.ok(took < HELD_BACK_MS, `acquired in ${took.toFixed(0)} ms, before the slow node answered (${HELD_BACK_MS} ms)`);
      assert.equal(await (admin[2] as Redis).get('fencelock:{quick}:lock'), null, 'the slow node had not run the acquire yet');
      await slow.settled;
      const owner = await (admin[0] as Redis).get('fencelock:{quick}:lock');
      assert.ok(owner !== null);
      assert.equal(await (admin[2] as Redis).get('fencelock:{quick}:lock'), owner, 'then it granted it too, to the same owner');
      slow.on = false;
      assert.deepEqual(await lock.release(), { released: 3, nodes: 3 }, 'released on all three nodes');
      for (const a of admin) assert.equal(await a.exists('fencelock:{quick}:lock'), 0);
    });
  });

  test('a late node error is reported as in any round', async () => {
    await withNodes(async (clients, _admin, locks) => {
      const errors: NodeErrorEvent[] = [];
      locks.on('nodeError', (e) => errors.push(e));
      const slow = holdBack(clients[2] as Redis, scripts.acquire, HELD_BACK_MS);
      slow.fail = true;
      const first = await locks.acquire('late-error');
      assert.equal(errors.length, 0, 'decided before the slow node answered');
      await slow.settled;
      // The error reaches the manager in the same turn as the rejection; one more turn for its event.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(
        errors.map((e) => e.operation),
        ['acquire'],
        'the late error is a node error of the acquire',
      );
      assert.ok(
        errors[0]?.node.endsWith(`:${String((clients[2] as Redis).options.port)}`),
        `named after the slow node: ${errors[0]?.node}`,
      );
      await first.release();
      assert.equal(errors.length, 1, 'reported once');
    });
  });

  test('a node that lost its data, heard late, is judged as in any round: its restart quarantine is announced', async () => {
    await withNodes(async (clients, admin, locks) => {
      const quarantined: string[] = [];
      locks.on('nodeQuarantined', (e) => quarantined.push(e.node));
      await (admin[2] as Redis).flushall();
      const slow = holdBack(clients[2] as Redis, scripts.acquire, HELD_BACK_MS);
      const lock = await locks.acquire('lost');
      assert.equal(quarantined.length, 0, 'decided by nodes 0 and 1 before node 2 answered');
      await slow.settled;
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(quarantined.length, 1, 'node 2 announced once its late reply was judged');
      assert.ok(quarantined[0]?.endsWith(`:${String((clients[2] as Redis).options.port)}`), `named after node 2: ${quarantined[0]}`);
      await eventually(async () => (await counterOf(admin[2] as Redis)) >= lock.fence, 2_000);
      await lock.release();
    });
  });

  test('a late grant with a lagging fence is raised to the lock’s fence, and the next round carries the fence hint', async () => {
    await withNodes(async (clients, admin, locks) => {
      const slow = holdBack(clients[2] as Redis, scripts.acquire, HELD_BACK_MS);
      // Nodes 0 and 1 move ahead of node 2: the quorum heard first (0 and 1) agrees on a fence node 2 lacks.
      await Promise.all(admin.slice(0, 2).map((a) => a.hincrby(MARKER, 'fence', 100)));
      const before = await counterOf(admin[2] as Redis);
      const first = await locks.acquire('lagging');
      assert.ok(before < first.fence, `node 2's counter ${before} lags the lock's fence ${first.fence}`);
      await slow.settled;
      slow.on = false;
      // Node 2 granted with its own, smaller fence; the write-back after its late reply has no event of its own.
      await eventually(async () => (await counterOf(admin[2] as Redis)) >= first.fence, 2_000);
      await first.release();
      const second = await locks.acquire('caught-up');
      const counters = await Promise.all(admin.map((a) => counterOf(a)));
      assert.deepEqual(counters, [second.fence, second.fence, second.fence], 'every node issued the same next fence');
      assert.ok(second.fence > first.fence);
      await second.release();
    });
  });

  test('a late grant from a node whose counter is not trusted is raised to the lock’s fence too', async () => {
    await withNodes(async (clients, admin, locks) => {
      const slow = holdBack(clients[2] as Redis, scripts.acquire, HELD_BACK_MS);
      await Promise.all(admin.slice(0, 2).map((a) => a.hincrby(MARKER, 'fence', 100)));
      await (admin[2] as Redis).hset(MARKER, 'trusted', '0');
      const lock = await locks.acquire('untrusted');
      await slow.settled;
      slow.on = false;
      await eventually(async () => (await counterOf(admin[2] as Redis)) >= lock.fence, 2_000);
      assert.equal(await (admin[2] as Redis).hget(MARKER, 'trusted'), '0', 'raised, not marked trusted (that is a repair’s to do)');
      await lock.release();
    });
  });
});

// The same for a release that hands the lock to this process's next caller (redlock.ts releaseTo,
// handedAtQuorum): that caller holds the lock once a quorum's releases granted it, whatever a slow node does.
describe('a release’s hand-over to this process’s next caller, decided by the quorum heard first', () => {
  /**
   * holder's lock, and the caller of the same process parked behind it (local-queue.ts) until its release: it
   * joined the line while holder was still acquiring (a caller arriving once the line is gone starts one of its own).
   */
  async function holderAndNext(locks: LockManager, resource: string): Promise<{ holder: Lock; next: Promise<Lock> }> {
    const first = locks.acquire(resource);
    const next = locks.acquire(resource);
    return { holder: await first, next };
  }

  test('a slow node delays no hand-over; it grants the same caller a moment later, and the release takes it back', async () => {
    await withNodes(async (clients, admin, locks) => {
      const { holder, next } = await holderAndNext(locks, 'handed');
      const slow = holdBack(clients[2] as Redis, scripts.release, HELD_BACK_MS);
      const started = performance.now();
      const released = holder.release();
      const lock = await next;
      const took = performance.now() - started;
      assert.ok(took < HELD_BACK_MS, `the next caller held the lock after ${took.toFixed(0)} ms, before the slow node answered`);
      // A round of its own would have issued a fence above the one the holder's release issued.
      assert.equal(lock.fence, holder.fence + 1n, `granted by the release: fence ${lock.fence}`);
      assert.equal(await (admin[2] as Redis).get(LOCK('handed')), holder.value, 'the slow node had not run the release yet');
      assert.deepEqual(await released, { released: 3, nodes: 3 }, 'the release reports all three nodes, the slow one included');
      assert.equal(await (admin[2] as Redis).get(LOCK('handed')), lock.value, 'then it granted the same caller');
      slow.on = false;
      assert.deepEqual(await lock.release(), { released: 3, nodes: 3 });
      for (const a of admin) assert.equal(await a.exists(LOCK('handed')), 0);
    });
  });

  test('a slow node that queued the caller behind another waiter sees it leave that queue once it holds the lock', async () => {
    await withNodes(async (clients, admin, locks) => {
      const urls = clients.map(nodeUrl);
      // Another process holds the lock; in line at the nodes: a (this process), then w (yet another process,
      // on node 2 alone); s waits in a's process, behind a. a's release then grants s the lock on nodes 0 and 1,
      // and on node 2 hands the key to w, which arrived before s, and queues s behind it.
      const holding = new LockManager(urls, { ttl: 10_000, nodeTimeout: 2_000 });
      const elsewhere = new LockManager([urls[2] as string], { ttl: 10_000, nodeTimeout: 2_000 });
      try {
        const holder = await holding.acquire('queued-late');
        const a = locks.acquire('queued-late');
        await eventually(async () => (await Promise.all(admin.map((x) => x.zcard(QUEUE('queued-late'))))).every((n) => n === 1), 3_000);
        const w = elsewhere.acquire('queued-late');
        await eventually(async () => (await (admin[2] as Redis).zcard(QUEUE('queued-late'))) === 2, 3_000);
        const s = locks.acquire('queued-late');
        await holder.release();
        const lockA = await a;
        const slow = holdBack(clients[2] as Redis, scripts.release, HELD_BACK_MS);
        const started = performance.now();
        const released = lockA.release();
        const lockS = await s;
        const took = performance.now() - started;
        assert.ok(took < HELD_BACK_MS, `s held the lock after ${took.toFixed(0)} ms, before the slow node answered`);
        assert.equal(lockS.fence, lockA.fence + 1n, `granted by the releases of nodes 0 and 1: fence ${lockS.fence}`);
        assert.deepEqual(await released, { released: 3, nodes: 3 });
        slow.on = false;
        const lockW = await w;
        assert.equal(await (admin[2] as Redis).get(LOCK('queued-late')), lockW.value, 'node 2 went to w, queued there before s');
        // Without leaving, s would stand first in line on node 2 until its place lapsed, ahead of every later waiter.
        await eventually(async () => (await (admin[2] as Redis).zcard(QUEUE('queued-late'))) === 0, 3_000);
        assert.ok(lockS.isValid(), 's still holds the lock');
        assert.deepEqual(await lockS.release(), { released: 2, nodes: 3 }, 'its keys were on nodes 0 and 1');
        await lockW.release();
      } finally {
        await Promise.all([holding.close(), elsewhere.close()]);
      }
    });
  });

  test('a late node error is the release’s, reported once', async () => {
    await withNodes(async (clients, _admin, locks) => {
      const errors: NodeErrorEvent[] = [];
      locks.on('nodeError', (e) => errors.push(e));
      const { holder, next } = await holderAndNext(locks, 'handed-error');
      const slow = holdBack(clients[2] as Redis, scripts.release, HELD_BACK_MS);
      slow.fail = true;
      const released = holder.release();
      const lock = await next;
      assert.equal(errors.length, 0, 'the next caller held the lock before the slow node answered');
      assert.deepEqual(await released, { released: 2, nodes: 3 });
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(
        errors.map((e) => e.operation),
        ['release'],
        'one node error, of the release',
      );
      slow.on = false;
      await lock.release();
      assert.equal(errors.length, 1, 'reported once');
    });
  });
});
