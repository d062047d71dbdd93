// What an automatic failover costs a lock: single Redis with a replica and Sentinel, real processes.
//
// Redis replicates asynchronously: the primary answers the acquire before its replica has the write. If the
// primary dies in that gap, Sentinel promotes a replica that never heard of the lock, and a second client is
// granted it while the first one's lease is still valid. To make "the write did not reach the replica"
// deterministic rather than a race, the replica replicates through a TCP proxy (test/support/faults/proxy.ts):
// blackhole() holds every byte of the replication stream after the lock write was sent, partition() then drops
// the held bytes and resets the link, exactly what the replica of a primary that crashed mid-stream ends up
// with. The replica itself stays up and answering, so Sentinel can promote it. (Pausing the replica would
// make it unpromotable; CLIENT KILL of the replica's link only delays the write by the reconnect.)
//
// Sentinel points a replica that replicates from another address than the primary's back at the primary once
// failover-timeout has passed (+fix-slave-config): 60 s here, longer than each test runs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, QuorumError, type LockManagerOptions } from '../../src/index.js';
import { startRedisSentinel, type LocalRedisSentinel } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { startProxy, type Proxy } from '../support/faults/proxy.js';

const TTL = 30_000;
const started: Array<LocalRedisSentinel | Proxy> = [];
const clients: Redis[] = [];
after(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(started.map((s) => ('close' in s ? s.close() : s.stop())));
});

/** A client of one node for inspection, giving up fast on a node the test killed. */
function direct(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  c.on('error', () => {});
  clients.push(c);
  return c;
}

/** A LockManager on its own ioredis Sentinel client, as one more application process would have. */
function manager(setup: LocalRedisSentinel, options: LockManagerOptions = {}): LockManager {
  const client = new Redis({ sentinels: setup.sentinels, name: setup.name, sentinelRetryStrategy: () => 100 });
  client.on('error', () => {});
  clients.push(client);
  return new LockManager([client], { ttl: TTL, ...options });
}

/**
 * A primary, its replica (replicating through a proxy, in sync) and 3 sentinels. `warm` has been locked once,
 * so fencelock's node marker (its epoch and fence counter) is on the replica too: the promoted replica looks like
 * the same node to fencelock, not like one that restarted empty (which the restart quarantine would catch).
 */
async function proxiedSetup(warm: LockManager | ((s: LocalRedisSentinel) => LockManager)) {
  const setup = await startRedisSentinel({ replicas: 1, sentinels: 3, downAfterMs: 1000, failoverTimeoutMs: 60_000 });
  started.push(setup);
  const primary = setup.primary;
  const replica = setup.replicas[0]!;
  const proxy = await startProxy(primary.port);
  started.push(proxy);
  const onReplica = direct(replica.url);
  const onPrimary = direct(primary.url);
  await onReplica.call('REPLICAOF', '127.0.0.1', String(proxy.port));
  const locks = typeof warm === 'function' ? warm(setup) : warm;
  await (await locks.acquire('warm-up')).release();
  // In sync through the proxy: the link is up and a write made now is confirmed by the replica.
  await eventually(
    async () => {
      const info = String(await onReplica.info('replication'));
      if (!info.includes('master_link_status:up') || !info.includes(`master_port:${proxy.port}`)) return false;
      await onPrimary.set('probe', String(Date.now()));
      return Number(await onPrimary.call('WAIT', '1', '100')) === 1;
    },
    15_000,
    50,
  );
  return { setup, primary, replica, proxy, onReplica, onPrimary, locks };
}

describe('single Redis + replica with Sentinel failover', () => {
  test('a failover after the lock write missed the replica: a second holder while the first lease is valid', async () => {
    const { setup, primary, proxy, onReplica, locks: a } = await proxiedSetup((s) => manager(s));
    try {
      proxy.blackhole(); // from here the replica receives nothing
      const lockA = await a.acquire('R');
      assert.equal(await onReplica.get('fencelock:{R}:lock'), null, 'the replica has not got the lock write');
      proxy.partition(); // the held bytes are dropped, as when the primary crashes mid-stream
      const killedAt = performance.now();
      await primary.kill();
      await setup.waitForFailover(primary.port, 30_000);
      const failoverMs = performance.now() - killedAt;

      const b = manager(setup);
      try {
        // Bounded: the new client finds the promoted replica through the sentinels within a few attempts.
        let lockB = null;
        const deadline = performance.now() + 10_000;
        while (!lockB && performance.now() < deadline) lockB = await b.tryAcquire('R').catch(() => null);
        const grantedMs = performance.now() - killedAt;
        assert.ok(lockB, 'B got R on the promoted replica');
        assert.ok(lockA.remaining() > 0, `A's lease is still valid (${lockA.remaining()} ms left)`);
        console.log(
          `failover: promoted ${failoverMs.toFixed(0)} ms after SIGKILL, B granted at ${grantedMs.toFixed(0)} ms ` +
            `with ${Math.round(lockA.remaining())} ms of A's lease left; fences A ${lockA.fence}, B ${lockB.fence}`,
        );
        // The fence counter lives on the node too, and its increment was lost with the lock write:
        // B's fence is not above A's, so a fenced store cannot tell B's writes from A's.
        assert.ok(lockB.fence <= lockA.fence, `B's fence ${lockB.fence} is not above A's ${lockA.fence}`);
        await lockB.release();
      } finally {
        await b.close();
      }
    } finally {
      await a.close();
    }
  });

  test('waitForReplicas: an acquire the replica did not confirm fails; a confirmed one survives the failover', async () => {
    const OPTIONS = { waitForReplicas: { replicas: 1, timeout: 100 } };
    const { setup, primary, replica, proxy, onReplica, onPrimary, locks: a } = await proxiedSetup((s) => manager(s, OPTIONS));
    try {
      // What the WAIT costs: acquire p50 over 200 uncontended acquires, with and without waitForReplicas (logged).
      const plain = manager(setup);
      const p50 = async (locks: LockManager): Promise<number> => {
        const took: number[] = [];
        for (let i = 0; i < 200; i++) {
          const t0 = performance.now();
          const lock = await locks.acquire(`cost-${i}`);
          took.push(performance.now() - t0);
          await lock.release();
        }
        return took.sort((x, y) => x - y)[100]!;
      };
      await p50(plain); // warm-up
      const [without, withWait] = [await p50(plain), await p50(a)];
      await plain.close();
      console.log(
        `waitForReplicas: acquire p50 ${withWait.toFixed(3)} ms with, ${without.toFixed(3)} ms without (replica through a proxy)`,
      );

      // The replica cut off: the grant does not count, and nothing is left on the primary.
      proxy.blackhole();
      const error = await a.acquire('R', { timeout: 2_000 }).then(
        () => assert.fail('acquire must not succeed while the replica cannot confirm it'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof QuorumError, `QuorumError expected, got ${String(error)}`);
      assert.match(error.message, /only 0 of 1 replicas confirmed/);
      assert.ok(error.message.includes(`sentinel(${setup.name}@127.0.0.1:`), `names the node by its sentinels: ${error.message}`);
      assert.equal(await onPrimary.exists('fencelock:{R}:lock'), 0, 'the unconfirmed grant was taken back');
      proxy.heal();

      // The replica back: A's acquire resolves only once the replica has the lock.
      let lockA = null;
      const deadline = performance.now() + 10_000;
      while (!lockA && performance.now() < deadline) lockA = await a.tryAcquire('R').catch(() => null);
      assert.ok(lockA, 'A got R once the replica confirms again');
      assert.equal(await onReplica.get('fencelock:{R}:lock'), lockA.value, 'the replica had the lock when acquire resolved');

      proxy.partition();
      const killedAt = performance.now();
      await primary.kill();
      const promoted = await setup.waitForFailover(primary.port, 30_000);
      assert.equal(promoted, replica);
      const failoverMs = performance.now() - killedAt;

      const b = manager(setup, OPTIONS);
      try {
        // B reaches the promoted replica and is told R is held, for as long as A's lease lasts.
        const replies: string[] = [];
        const until = performance.now() + 10_000;
        while (performance.now() < until) {
          const reply = await b.tryAcquire('R').then(
            (l) => (l ? 'granted' : 'held'),
            () => 'error',
          );
          replies.push(reply);
          if (reply !== 'error') break;
        }
        assert.equal(replies.at(-1), 'held', `B is refused while A holds R: ${replies.join(', ')}`);
        assert.ok(lockA.remaining() > 0);
        console.log(
          `waitForReplicas: promoted ${failoverMs.toFixed(0)} ms after SIGKILL; B refused, A's lease ${Math.round(lockA.remaining())} ms left`,
        );
      } finally {
        await b.close();
      }
    } finally {
      await a.close();
    }
  });
});
