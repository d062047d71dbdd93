// The acquire request (redlock.ts acquireArgs, acquire.lua): an uncontended first attempt is token and ttl
// alone; a caller that finds the lock busy takes its place in line with the attempt right after it subscribes
// (wait.ts); a node with no marker takes the token's last 16 characters as its epoch. Real redis-server nodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Lock } from '../../src/index.js';
import { acquireArgs } from '../../src/redis/redlock.js';
import { acquireCalls } from './fixtures/acquire-calls.js';
import { eventually } from '../support/harness.js';
import { keysOf, queued, readyManager, uniqueResource, within, withNodeSets } from '../lock-manager/helpers.js';

const OPTIONS = { ttl: 5000, nodeTimeout: 200, acquireTimeout: 10_000 };

test('acquireArgs leaves out the trailing arguments that would say their default', () => {
  const bare = { fair: true, ticket: '', lease: 2800 };
  const cases: ReadonlyArray<[string, Parameters<typeof acquireArgs>, string[]]> = [
    ['a bare try: token and ttl', ['t', 5000, bare, false, undefined], ['t', '5000']],
    ['the age asked for (quarantine)', ['t', 5000, bare, true, undefined], ['t', '5000', '', '1']],
    ['a fence hint', ['t', 5000, bare, false, 42n], ['t', '5000', '42', '0']],
    [
      'a place in line: ticket, queue lease, fair',
      ['t', 5000, { fair: true, ticket: '17.5', lease: 2800 }, false, undefined],
      ['t', '5000', '', '0', '17.5', '2800', '1'],
    ],
    [
      'an unfair waiter that watches',
      ['t', 5000, { fair: false, ticket: '', lease: 2800, watch: true }, false, undefined],
      ['t', '5000', '', '0', '', '2800', 'w'],
    ],
    [
      'an unfair single attempt',
      ['t', 5000, { fair: false, ticket: '', lease: 2800 }, false, undefined],
      ['t', '5000', '', '0', '', '2800', '0'],
    ],
  ];
  for (const [what, args, expected] of cases) assert.deepEqual(acquireArgs(...args), expected, what);
});

withNodeSets('the acquire request', [1, 3], (env, nodeCount) => {
  test('an uncontended acquire sends token and ttl alone, and a node with no marker takes its epoch from the token', async () => {
    const { admin, nodes } = env();
    for (const a of admin) await a.flushall();
    const locks = await readyManager(env(), 'ioredis', OPTIONS);
    for (const a of admin) await a.flushall(); // the warm-up may have written the markers: start from none
    const resource = uniqueResource('bare');
    let token = '';
    const calls = await acquireCalls(nodes.urls, async () => {
      const lock = await locks.acquire(resource);
      token = lock.value;
      await lock.release();
    });
    for (const [i, node] of calls.entries()) {
      assert.deepEqual(node, [[token, '5000']], `node ${i}: one acquire request, token and ttl alone`);
      assert.equal(
        await admin[i]?.hget('fencelock:{node}:epoch', 'epoch'),
        token.slice(-16),
        `node ${i}: the new epoch is the token's tail`,
      );
    }
    assert.equal(calls.length, nodeCount);
  });

  test('a caller that finds the lock busy tried bare first, then took its place in line with its ticket, and gets the lock', async () => {
    const { admin, nodes } = env();
    const resource = uniqueResource('busy');
    const holderSide = await readyManager(env(), 'ioredis', OPTIONS);
    const waiterSide = await readyManager(env(), 'ioredis', OPTIONS);
    const holder = await holderSide.acquire(resource);
    let waiting: Promise<Lock> | undefined;
    const calls = await acquireCalls(nodes.urls, async () => {
      waiting = waiterSide.acquire(resource);
      await eventually(async () => (await queued(admin, resource)).every((q) => q.length === 1), 5000);
    });
    for (const [i, node] of calls.entries()) {
      assert.ok(node.length >= 2, `node ${i}: a try and an attempt that queued, got ${node.length}`);
      assert.equal(node[0]?.length, 2, `node ${i}: the first attempt is token and ttl alone: ${JSON.stringify(node[0])}`);
      assert.equal(node[1]?.length, 7, `node ${i}: the next one carries the ticket: ${JSON.stringify(node[1])}`);
      assert.match(String(node[1]?.[4]), /^\d+\.\d{3}$/, `node ${i}: a ticket (arrival time)`);
    }
    const queue = await admin[0]?.zrange(keysOf(resource).queue, '0', '-1');
    await holder.release();
    const lock = await within(waiting as Promise<Lock>, 5000, 'the waiter');
    assert.deepEqual(queue, [lock.value], 'the waiter in line was the one that got the lock');
    await lock.release();
  });
});
