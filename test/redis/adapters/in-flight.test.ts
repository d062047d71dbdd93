// Backpressure per node (src/redis/adapters/in-flight.ts and its use in node.ts): a cap on requests on the
// wire, a timeout that measures the node and not this process's backlog, and a hung node's backlog failing at
// once. The pure gate first, then real nodes: a busy node is never reported hung, a SIGSTOPped one is.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, QuorumError, type NodeErrorEvent } from '../../../src/index.js';
import { InFlight } from '../../../src/redis/adapters/in-flight.js';
import { MAX_IN_FLIGHT } from '../../../src/redis/adapters/node.js';
import { startRedisNodes } from '../../../src/testing/index.js';
import { eventually } from '../../support/harness.js';
import { scriptCalls, within } from '../../lock-manager/helpers.js';

describe('InFlight', () => {
  test('at most `limit` requests start; the rest start in order as slots free', () => {
    const gate = new InFlight(2);
    const started: number[] = [];
    for (let i = 0; i < 5; i++) gate.enter({ start: () => started.push(i) > 0, stalled: assert.fail });
    assert.deepEqual(started, [0, 1]);
    assert.equal(gate.waiting, 3);
    gate.leave();
    assert.deepEqual(started, [0, 1, 2]);
    gate.leave();
    gate.leave();
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    assert.equal(gate.active, 2);
  });

  test('requests that gave up while they waited are passed over without a call each on the stack', () => {
    // Seen in W5 (10,000 locks, 5 nodes): a backlog of timed-out requests, each one's start() calling back
    // into leave(), overflowed the stack as the first slot freed.
    const gate = new InFlight(1);
    const started: string[] = [];
    gate.enter({ start: () => started.push('first') > 0, stalled: assert.fail });
    for (let i = 0; i < 100_000; i++) gate.enter({ start: () => false, stalled: assert.fail });
    gate.enter({ start: () => started.push('last') > 0, stalled: assert.fail });
    gate.leave();
    assert.deepEqual(started, ['first', 'last'], 'the slot went past every request that gave up, to the next live one');
    assert.equal(gate.active, 1);
    assert.equal(gate.waiting, 0);
  });

  test('an unresponsive node: the backlog is told at once, one probe at a time goes out, an answer lets the rest go', () => {
    const gate = new InFlight(2);
    const stalled: number[] = [];
    const started: number[] = [];
    for (let i = 0; i < 5; i++) gate.enter({ start: () => started.push(i) > 0, stalled: () => stalled.push(i) });
    gate.unresponsive();
    assert.deepEqual(stalled, [2, 3, 4], 'the waiting requests are told, in order');
    gate.leave();
    gate.leave();
    assert.deepEqual(started, [0, 1, 2], 'with nothing on the wire, one request goes out as a probe');
    const withdraw = gate.enter({ start: () => started.push(5) > 0, stalled: () => stalled.push(5) });
    assert.deepEqual(stalled, [2, 3, 4, 5], 'a new request is told at once');
    withdraw();
    gate.answered();
    assert.deepEqual(started, [0, 1, 2, 3], 'it answered: a slot is free again (the probe holds the other)');
    gate.leave();
    gate.leave();
    assert.deepEqual(started, [0, 1, 2, 3, 4], 'a withdrawn request never starts');
    assert.equal(gate.active, 1);
  });
});

/** A manager over its own ioredis clients, connected, with its nodeError events collected. */
async function manager(
  urls: readonly string[],
  nodeTimeout: number,
): Promise<{ locks: LockManager; errors: NodeErrorEvent[]; close(): Promise<void> }> {
  const clients = urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 }));
  for (const c of clients) c.on('error', () => undefined);
  await Promise.all(clients.map((c) => c.connect()));
  const locks = new LockManager(clients, { nodeTimeout, ttl: 10_000, acquireTimeout: 60_000 });
  const errors: NodeErrorEvent[] = [];
  locks.on('nodeError', (e) => errors.push(e));
  await (await locks.acquire('warm-up')).release();
  return {
    locks,
    errors,
    close: async () => {
      await locks.close();
      for (const c of clients) c.disconnect();
    },
  };
}

/** `count` acquire+release pairs at once, each on its own key: how many failed, and the first failure. */
async function burst(locks: LockManager, count: number, label: string): Promise<{ failed: number; first: unknown }> {
  let failed = 0;
  let first: unknown;
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      locks.acquire(`${label}-${i}`).then(
        (lock) => lock.release(),
        (error: unknown) => {
          failed++;
          first ??= error;
        },
      ),
    ),
  );
  return { failed, first };
}

describe('a busy node against a hung one', () => {
  test('a burst far larger than one nodeTimeout of work: no failure, and the node is never reported down', async () => {
    const nodes = await startRedisNodes(1);
    const m = await manager(nodes.urls, 100);
    try {
      const started = performance.now();
      const { failed, first } = await within(burst(m.locks, 6000, 'busy'), 50_000, 'the burst');
      const seconds = (performance.now() - started) / 1000;
      assert.equal(failed, 0, `0 failures expected in ${seconds.toFixed(1)} s, first: ${String(first)}`);
      assert.deepEqual(
        m.errors.map((e) => e.error.message),
        [],
        'no nodeError: a node answering the requests ahead is busy, not hung',
      );
    } finally {
      await m.close();
      await nodes.stop();
    }
  });

  test('with one of three nodes SIGSTOPped, a burst succeeds on the others and only the stopped node is reported', async () => {
    const nodes = await startRedisNodes(3);
    const m = await manager(nodes.urls, 100);
    const frozen = nodes.nodes[0]!;
    try {
      frozen.pause();
      const started = performance.now();
      const { failed, first } = await within(burst(m.locks, 2000, 'hung'), 50_000, 'the burst');
      const seconds = (performance.now() - started) / 1000;
      assert.equal(failed, 0, `quorum 2 of 3 answers: 0 failures expected (${seconds.toFixed(1)} s), first: ${String(first)}`);
      assert.ok(m.errors.length > 0, 'the stopped node is reported');
      const frozenName = frozen.url.replace('redis://', '');
      const others = m.errors.filter((e) => e.node !== frozenName);
      assert.deepEqual(
        others.map((e) => `${e.node}: ${e.error.message}`),
        [],
        `only the stopped node (${frozenName}) is named; the others' reports, after ${seconds.toFixed(1)} s`,
      );
      assert.ok(
        m.errors.every((e) => /no answer within 100 ms \(node down, hung or unreachable\)/.test(e.error.message)),
        `every report says it did not answer: ${m.errors[0]?.error.message}`,
      );
    } finally {
      frozen.resume();
      await m.close();
      await nodes.stop();
    }
  });

  test('a single SIGSTOPped node: acquire ends in QuorumError naming it, within a few nodeTimeouts', async () => {
    const nodes = await startRedisNodes(1);
    const m = await manager(nodes.urls, 100);
    try {
      nodes.nodes[0]!.pause();
      const started = performance.now();
      const outcomes = await within(
        Promise.allSettled(Array.from({ length: 1000 }, (_, i) => m.locks.acquire(`frozen-${i}`))),
        20_000,
        'acquires on a frozen node',
      );
      const took = performance.now() - started;
      assert.ok(
        outcomes.every((o) => o.status === 'rejected' && o.reason instanceof QuorumError),
        'every acquire fails with QuorumError',
      );
      const reason = (outcomes[0] as PromiseRejectedResult).reason as QuorumError;
      assert.match(reason.message, /no answer within 100 ms \(node down, hung or unreachable\)/);
      // Two rounds per acquire (a round that met only node errors is tried once more), and a release of each
      // failed round: without the cap, thousands of scripts would wait in the frozen node's socket and run when
      // it wakes. With it, one slot-full and then one probe at a time.
      // close() lets the background cleanups (waiters leaving the queues) finish or time out: after it, only
      // what was written to the frozen node's socket is left for it to run.
      await m.close();
      nodes.nodes[0]!.resume();
      const admin = new Redis(nodes.urls[0]!);
      try {
        const [ran = 0] = await scriptCalls([admin]);
        assert.ok(ran <= MAX_IN_FLIGHT + 20, `the frozen node ran ${ran} scripts once it woke (at most ${MAX_IN_FLIGHT + 20} expected)`);
      } finally {
        admin.disconnect();
      }
      assert.ok(took < 15_000, `1000 acquires on a frozen node took ${took.toFixed(0)} ms to fail`);
      await eventually(() => m.errors.length > 0, 1000);
    } finally {
      nodes.nodes[0]!.resume();
      await m.close();
      await nodes.stop();
    }
  });
});
