// fencelock's OpenTelemetry metrics, read back through the real SDK after scripted scenarios.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { metrics } from '@opentelemetry/api';
import { InvalidArgumentError, LockLostError, LockManager, LockTimeoutError, QuorumError, type LockEvents } from '../../src/index.js';
import { setup, type Setup } from '../support/harness.js';
import { aborted, keysOf, readyManager, uniqueResource, within } from '../lock-manager/helpers.js';
import { inMemoryMetrics, withProvider } from './otel.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 90, acquireTimeout: 5000 };
const ACQUIRE = 'fencelock.acquire.duration';

describe('metrics (3 nodes)', { concurrency: false }, () => {
  let env: Setup | undefined;
  const nodes = (): Setup => {
    assert.ok(env, 'node set not started');
    return env;
  };
  before(async () => {
    env = await setup(3);
  });
  after(async () => {
    await env?.close();
  });

  test('instruments carry their documented names, units and kinds', async () => {
    const otel = inMemoryMetrics();
    try {
      const locks = await readyManager(nodes(), 'ioredis', withProvider(OPTIONS, otel));
      const lock = await locks.acquire(uniqueResource('describe'));
      await lock.release();
      const snapshot = await otel.read();
      assert.deepEqual(snapshot.kind('fencelock.acquire.duration'), { unit: 's', kind: 'histogram' });
      assert.deepEqual(snapshot.kind('fencelock.hold.duration'), { unit: 's', kind: 'histogram' });
      assert.deepEqual(snapshot.kind('fencelock.acquire.attempts'), { unit: '{attempt}', kind: 'counter' });
      assert.deepEqual(snapshot.kind('fencelock.locks.held'), { unit: '{lock}', kind: 'up-down counter' });
    } finally {
      await otel.shutdown();
    }
  });

  test('an inconclusive auto-extension round (a hung node plus a refusal) is retried, counted, then the lock is lost', async () => {
    const otel = inMemoryMetrics();
    const { admin, nodes: redis } = nodes();
    const locks = await readyManager(nodes(), 'ioredis', withProvider({ ...OPTIONS, ttl: 1200 }, otel));
    const resource = uniqueResource('flaky-extend');
    try {
      const outcome = locks.withLock(resource, async (lock) => {
        redis.nodes[0]!.pause(); // times out: an error, not a refusal
        await admin[1]!.del(keysOf(resource).lock); // refuses: the key is gone
        // node 2 still extends: 1 extended + 1 error reaches the quorum of 2, so each round is inconclusive
        await aborted(lock.signal, 10_000);
      });
      await within(assert.rejects(outcome, LockLostError), 15_000, 'withLock');
    } finally {
      redis.nodes[0]!.resume();
    }
    const snapshot = await otel.read();
    assert.ok(snapshot.total('fencelock.extend.failures', { 'fencelock.outcome': 'retrying' }) >= 1, 'inconclusive rounds counted');
    assert.equal(snapshot.total('fencelock.locks.lost'), 1);
    assert.equal(snapshot.total('fencelock.locks.held'), 0);
    assert.equal(snapshot.histogram('fencelock.hold.duration', { 'fencelock.outcome': 'lost' }).count, 1);
    await otel.shutdown();
  });
  test('with a meter and no listener, a lease that runs out is counted lost when it runs out, not at the next use', async () => {
    const otel = inMemoryMetrics();
    try {
      const locks = await readyManager(nodes(), 'ioredis', withProvider(OPTIONS, otel));
      const lock = await locks.acquire(uniqueResource('meter-watches'), { ttl: 300 });
      // The lock is neither used nor listened to: only the meter's need makes its end watched.
      await new Promise((resolve) => setTimeout(resolve, lock.remaining() + 100)); // the lease's own end: nothing to wait on
      const snapshot = await otel.read();
      assert.equal(snapshot.total('fencelock.locks.lost'), 1);
      assert.equal(snapshot.total('fencelock.locks.held'), 0);
      assert.equal(snapshot.histogram('fencelock.hold.duration', { 'fencelock.outcome': 'lost' }).count, 1);
      assert.ok(lock.lostError instanceof LockLostError);
    } finally {
      await otel.shutdown();
    }
  });

  // Last in this block: it ends by killing two of the three nodes.
  test('a scripted scenario: acquired, timeout, aborted, busy, closed, released, lost, then no_quorum with node errors by node', async () => {
    const otel = inMemoryMetrics();
    const { admin, nodes: redis } = nodes();
    try {
      const locks = await readyManager(nodes(), 'ioredis', withProvider(OPTIONS, otel));
      const other = await readyManager(nodes(), 'ioredis', withProvider(OPTIONS, otel));
      const held = uniqueResource('held');

      // acquired; then a second acquire on the same resource times out, one is aborted, a tryAcquire finds it busy
      const a = await locks.acquire(held);
      await assert.rejects(locks.acquire(held, { timeout: 150 }), LockTimeoutError);
      const abort = new AbortController();
      const abortedAcquire = locks.acquire(held, { signal: abort.signal });
      abort.abort(new Error('caller gave up'));
      await assert.rejects(abortedAcquire, /caller gave up/);
      assert.equal(await locks.tryAcquire(held), null);
      // close() cuts another manager's wait short: counted as aborted too
      // Its rejection is expected before close() resolves (close() rejects pending acquires at once): handled from the start.
      const closedAcquire = assert.rejects(other.acquire(held), (e: unknown) => (e as { code?: string }).code === 'CLOSED');
      await other.close();
      await closedAcquire;

      let snapshot = await otel.read();
      assert.equal(snapshot.total('fencelock.locks.held'), 1, 'one lock held mid-scenario');

      // withLock: acquired and released around fn
      assert.equal(await locks.withLock(uniqueResource('with'), async () => 'done'), 'done');
      await a.extend();
      await a.release();

      // lost: the key vanishes behind the holder's back, and its extension fails
      const doomed = uniqueResource('doomed');
      const b = await locks.acquire(doomed);
      await Promise.all(admin.map((c) => c.del(keysOf(doomed).lock)));
      await assert.rejects(b.extend(), LockLostError);
      await b.release(); // a release after the loss must not count the lock as ended twice

      snapshot = await otel.read();
      const acquires = (method: string, outcome: string): number =>
        snapshot.histogram(ACQUIRE, { 'fencelock.method': method, 'fencelock.outcome': outcome }).count;
      assert.equal(acquires('acquire', 'acquired'), 2);
      assert.equal(acquires('acquire', 'timeout'), 1);
      assert.equal(acquires('acquire', 'aborted'), 2, 'the aborted signal and the closed manager');
      assert.equal(acquires('tryAcquire', 'busy'), 1);
      assert.equal(acquires('withLock', 'acquired'), 1);
      assert.equal(snapshot.histogram(ACQUIRE).count, 7, 'every acquire call recorded exactly once');
      const timedOut = snapshot.histogram(ACQUIRE, { 'fencelock.outcome': 'timeout' });
      assert.ok(timedOut.sum >= 0.15, `the timed-out acquire waited its 150 ms: ${timedOut.sum} s`);
      assert.ok(timedOut.sum < 5, `and not much longer: ${timedOut.sum} s`);

      assert.equal(snapshot.histogram('fencelock.hold.duration', { 'fencelock.outcome': 'released' }).count, 2);
      assert.equal(snapshot.histogram('fencelock.hold.duration', { 'fencelock.outcome': 'lost' }).count, 1);
      assert.equal(snapshot.total('fencelock.locks.held'), 0, 'nothing held at the end');
      assert.equal(snapshot.total('fencelock.locks.lost'), 1);
      assert.equal(snapshot.total('fencelock.extend.failures', { 'fencelock.outcome': 'lost' }), 1);
      const retries = snapshot.total('fencelock.acquire.retries');
      assert.equal(snapshot.total('fencelock.acquire.attempts'), 7 + retries, 'attempts = calls + retries');

      // no_quorum: two of three nodes die; a tryAcquire cannot reach a quorum, and each dead node is named
      const nodeErrors: Array<LockEvents['nodeError'][0]> = [];
      locks.on('nodeError', (e) => nodeErrors.push(e));
      await Promise.all([redis.nodes[0]!.kill(), redis.nodes[1]!.kill()]);
      await assert.rejects(locks.tryAcquire(uniqueResource('no-quorum')), QuorumError);

      snapshot = await otel.read();
      assert.equal(acquires('tryAcquire', 'no_quorum'), 1);
      const failedOnAcquire = new Set(nodeErrors.filter((e) => e.operation === 'acquire').map((e) => e.node));
      assert.equal(failedOnAcquire.size, 2, `two nodes failed the acquire: ${[...failedOnAcquire].join(', ')}`);
      for (const node of failedOnAcquire) {
        assert.ok(
          snapshot.total('fencelock.node.errors', { 'fencelock.node': node, 'fencelock.operation': 'acquire' }) >= 1,
          `node errors counted for ${node}`,
        );
        assert.ok(
          [redis.nodes[0]!.port, redis.nodes[1]!.port].some((port) => node.endsWith(`:${port}`)),
          `${node} is one of the killed nodes`,
        );
      }
      const survivor = snapshot
        .points('fencelock.node.errors', { 'fencelock.operation': 'acquire' })
        .filter((p) => !failedOnAcquire.has(String(p.attributes['fencelock.node'])));
      assert.deepEqual(survivor, [], 'the live node is never blamed');
      for (const p of snapshot.points('fencelock.node.errors'))
        assert.ok(
          typeof p.attributes['error.type'] === 'string' && p.attributes['error.type'] !== '',
          `error.type on ${JSON.stringify(p.attributes)}`,
        );
    } finally {
      await otel.shutdown();
    }
  });
});

describe('meter provider', () => {
  test('without a meterProvider option the global provider is used, even one registered after the manager was created', async () => {
    const redis = await setup(1);
    const otel = inMemoryMetrics();
    try {
      const locks = await readyManager(redis, 'node-redis', OPTIONS);
      assert.ok(metrics.setGlobalMeterProvider(otel.provider), 'global meter provider registered');
      const lock = await locks.acquire(uniqueResource('global'));
      await lock.release();
      const snapshot = await otel.read();
      assert.equal(snapshot.histogram(ACQUIRE, { 'fencelock.outcome': 'acquired' }).count, 1);
      assert.equal(snapshot.histogram('fencelock.hold.duration').count, 1);
    } finally {
      metrics.disable();
      await otel.shutdown();
      await redis.close();
    }
  });

  test('a meterProvider that is not one is rejected before any connection is made', () => {
    for (const bad of [null, 42, {}, { getMeter: 'no' }])
      assert.throws(
        () => new LockManager(['redis://127.0.0.1:1'], { meterProvider: bad as never }),
        (e: unknown) => e instanceof InvalidArgumentError && /meterProvider/.test(e.message),
        `meterProvider ${JSON.stringify(bad)}`,
      );
  });
});
