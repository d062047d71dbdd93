// The scripts' common paths (acquire.lua's cheap path, release.lua's compare-and-delete and its grant to the
// releasing process's next caller with nobody queued), which run before the
// shared functions are built: each must answer and write exactly what the general path would, and hand every
// case it does not cover (a new or untrusted node, a longer ttl, a fence hint, the age asked for, a queue) to
// the general path. Script by script on a real node.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { acquireLua, releaseLua } from '../../src/redis/scripts/lua.generated.js';
import { markerKey } from '../../src/redis/keys.js';
import { setup, type Setup } from '../support/harness.js';
import { keysOf, uniqueResource } from '../lock-manager/helpers.js';

const MARKER = markerKey('fencelock');
const EPOCH = 'abcdef0123456789';

describe('acquire.lua and release.lua: the common paths', () => {
  let env: Setup;
  before(async () => {
    env = await setup(1);
  });
  after(async () => env.close());
  const admin = (): Redis => env.admin[0] as Redis;

  /** A trusted node whose marker has seen leases of `ttl` ms and issued fence `fence`. */
  async function trustedNode(ttl: string, fence: string): Promise<void> {
    await admin().del(MARKER);
    await admin().hset(MARKER, { epoch: EPOCH, born: Date.now() - 60_000, trusted: '1', ttl, fence, v: '2' });
  }
  const acquire = (resource: string, token: string, ...args: string[]): Promise<string> =>
    admin()
      .eval(acquireLua, 2, keysOf(resource).lock, MARKER, token, ...args)
      .then(String);
  const fields = (reply: string): string[] => reply.split(' ');

  test('the usual acquire (trusted node, ttl it has seen, no hint, no age) is the grant reply, with the next fence', async () => {
    await trustedNode('10000', '41');
    const r = uniqueResource('usual');
    assert.equal(await acquire(r, 'token-usual-0000000000', '5000'), `1 42 ${EPOCH} -1 1 10000`);
    assert.equal(await admin().get(keysOf(r).lock), 'token-usual-0000000000');
    const pttl = await admin().pttl(keysOf(r).lock);
    assert.ok(pttl > 4_000 && pttl <= 5_000, `its lease is the ttl asked for: ${pttl}`);
    assert.deepEqual(await admin().hmget(MARKER, 'fence', 'ttl'), ['42', '10000'], 'the counter rose by one, the longest ttl stays');
  });

  test('a longer ttl than the node has seen raises the marker’s longest ttl (restart quarantine counts on it)', async () => {
    await trustedNode('3000', '7');
    const [ok, fence, epoch, age, trusted, longest] = fields(await acquire(uniqueResource('longer'), 'token-longer-000000000', '9000'));
    assert.deepEqual([ok, fence, epoch, age, trusted, longest], ['1', '8', EPOCH, '-1', '1', '9000']);
    assert.equal(await admin().hget(MARKER, 'ttl'), '9000');
  });

  test('an untrusted node reports its marker’s age; a node with no marker takes one, epoch from the token', async () => {
    await trustedNode('10000', '3');
    await admin().hset(MARKER, 'trusted', '0');
    const [ok, fence, , age, trusted] = fields(await acquire(uniqueResource('untrusted'), 'token-untrusted-000000', '5000'));
    assert.deepEqual([ok, fence, trusted], ['1', '4', '0']);
    assert.ok(Number(age) >= 59_000, `the age of the marker: ${age}`);

    await admin().del(MARKER);
    const token = 'token-new-node-0123456789abcdef';
    const [ok2, fence2, epoch2, age2, trusted2, longest2] = fields(await acquire(uniqueResource('new-node'), token, '5000'));
    assert.deepEqual([ok2, fence2, epoch2, trusted2, longest2], ['1', '1', token.slice(-16), '0', '5000']);
    assert.ok(Number(age2) >= 0 && Number(age2) < 1_000, `a new marker is young: ${age2}`);
    assert.deepEqual(await admin().hmget(MARKER, 'epoch', 'trusted', 'v'), [token.slice(-16), '0', '2']);
  });

  test('a fence hint raises the counter first; the age asked for is reported on a trusted node too', async () => {
    await trustedNode('10000', '5');
    assert.equal(fields(await acquire(uniqueResource('hint'), 'token-hint-00000000000', '5000', '100', '0'))[1], '101');
    const [, fence, , age, trusted] = fields(await acquire(uniqueResource('age'), 'token-age-000000000000', '5000', '', '1'));
    assert.deepEqual([fence, trusted], ['102', '1']);
    assert.ok(Number(age) >= 59_000, `asked for, the age is read: ${age}`);
  });

  test('fences stay exact past 2^53 on the common path', async () => {
    await trustedNode('10000', '9007199254740993');
    assert.equal(fields(await acquire(uniqueResource('big'), 'token-big-000000000000', '5000'))[1], '9007199254740994');
    assert.equal(await admin().hget(MARKER, 'fence'), '9007199254740994');
  });

  test('a queue or a 0.1 counter sends the acquire down the general path, which queues behind the waiter', async () => {
    await trustedNode('10000', '20');
    const r = uniqueResource('queued');
    const k = keysOf(r);
    await admin().zadd(k.queue, '1', 'first-in-line');
    await admin().zadd(k.leases, Date.now() + 60_000, 'first-in-line');
    const reply = fields(await acquire(r, 'token-late-00000000000', '5000', '', '0', '2', '2800', '1'));
    assert.equal(reply[0], '0', `refused: a live waiter is first (${reply.join(' ')})`);
    assert.equal(reply[6], '1', 'someone is ahead');
    assert.equal(await admin().exists(k.lock), 0, 'the free key was not taken past the queue');
    assert.equal(await admin().hget(MARKER, 'fence'), '20', 'no fence drawn');
  });

  test('release: a key that is not ours is left alone; ours with nobody waiting is deleted; with a waiter it is handed over', async () => {
    await trustedNode('10000', '30');
    const release = (resource: string, token: string): Promise<unknown> =>
      admin().eval(releaseLua, 2, keysOf(resource).lock, MARKER, token, '30');
    const theirs = uniqueResource('theirs');
    await admin().set(keysOf(theirs).lock, 'someone-else', 'PX', 60_000);
    assert.equal(await release(theirs, 'me'), 0);
    assert.equal(await admin().get(keysOf(theirs).lock), 'someone-else');

    const free = uniqueResource('free');
    await admin().set(keysOf(free).lock, 'me', 'PX', 60_000);
    assert.equal(await release(free, 'me'), 1);
    assert.equal(await admin().exists(keysOf(free).lock), 0);

    const handed = uniqueResource('handed');
    const h = keysOf(handed);
    await admin().set(h.lock, 'me', 'PX', 60_000);
    await admin().zadd(h.queue, '1', 'next-waiter-0123456789');
    await admin().zadd(h.leases, Date.now() + 60_000, 'next-waiter-0123456789');
    assert.equal(await release(handed, 'me'), 1);
    assert.equal(await admin().get(h.lock), 'next-waiter-0123456789', 'the general path handed it to the waiter');
  });

  // redlock.ts releaseTo: the releaser's fence as the hint, then the successor's token, ticket, ttl and age flag.
  const releaseTo = (resource: string, hint: string, successor: string, ttl: string, age = '0'): Promise<string> =>
    admin().eval(releaseLua, 2, keysOf(resource).lock, MARKER, 'me', hint, successor, '1700000000000.000', ttl, age, '15000').then(String);

  test('release to the next caller of its process, nobody queued: the grant reply with the next fence, its ttl on the key', async () => {
    await trustedNode('10000', '50');
    const r = uniqueResource('to-successor');
    await admin().set(keysOf(r).lock, 'me', 'PX', 60_000);
    assert.equal(await releaseTo(r, '50', 'successor-0123456789abcdef', '5000'), `1 51 ${EPOCH} -1 1 10000`);
    assert.equal(await admin().get(keysOf(r).lock), 'successor-0123456789abcdef');
    const pttl = await admin().pttl(keysOf(r).lock);
    assert.ok(pttl > 4_000 && pttl <= 5_000, `its lease is the successor's ttl: ${pttl}`);
    assert.deepEqual(await admin().hmget(MARKER, 'fence', 'ttl'), ['51', '10000']);

    // not ours: left alone, nothing drawn (the general path says 0)
    await admin().set(keysOf(r).lock, 'someone-else', 'PX', 60_000);
    assert.equal(await releaseTo(r, '51', 'successor-0123456789abcdef', '5000'), '0');
    assert.equal(await admin().hget(MARKER, 'fence'), '51');
  });

  test('release to the next caller: a hint above the counter, a longer ttl, the age asked for, an untrusted node, a 0.1 counter or a queue take the general path', async () => {
    const r = uniqueResource('to-successor-general');
    const k = keysOf(r);
    const next = 'successor-fedcba9876543210';
    const fresh = async (ttl: string, fence: string): Promise<void> => {
      await trustedNode(ttl, fence);
      await admin().del(k.queue, k.leases, k.fence);
      await admin().set(k.lock, 'me', 'PX', 60_000);
    };
    await fresh('10000', '5');
    assert.equal(fields(await releaseTo(r, '100', next, '5000'))[1], '101', 'the counter raised to the hint, then one more');
    await fresh('3000', '5');
    assert.deepEqual(fields(await releaseTo(r, '5', next, '9000')).slice(0, 2), ['1', '6']);
    assert.equal(await admin().hget(MARKER, 'ttl'), '9000', 'the longest ttl recorded');
    await fresh('10000', '5');
    const [, , , age] = fields(await releaseTo(r, '5', next, '5000', '1'));
    assert.ok(Number(age) >= 59_000, `asked for, the age is read: ${age}`);
    await fresh('10000', '5');
    await admin().hset(MARKER, 'trusted', '0');
    assert.equal(fields(await releaseTo(r, '5', next, '5000'))[4], '0', 'untrusted, and says so');
    await fresh('10000', '5');
    await admin().hset(k.fence, 'n', '70');
    assert.equal(fields(await releaseTo(r, '5', next, '5000'))[1], '71', 'the 0.1 counter folded in first');
    assert.equal(await admin().exists(k.fence), 0);
    await fresh('10000', '5');
    await admin().zadd(k.queue, '1', 'abcdefgh.waiter-first-in-line');
    await admin().zadd(k.leases, Date.now() + 60_000, 'abcdefgh.waiter-first-in-line');
    assert.equal(fields(await releaseTo(r, '5', next, '5000'))[0], '0', 'the waiter arrived first: the successor is queued behind it');
    assert.equal(await admin().get(k.lock), 'abcdefgh.waiter-first-in-line', 'and the lock went to the waiter');
  });
});
