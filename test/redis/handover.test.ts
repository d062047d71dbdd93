// The hand-over inside the release, script by script on a real node: who gets a released key (the first
// waiter whose place is live, never a lapsed one; a parked caller of the releasing process only when it
// arrived first), for how long, and what a waiter that gave up does with a key handed to it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { dequeueLua, releaseLua } from '../../src/redis/scripts/lua.generated.js';
import { markerKey } from '../../src/redis/keys.js';
import { eventually, setup, type Setup } from '../support/harness.js';
import { keysOf, lockValues, queued, readyManager, uniqueResource, within } from '../lock-manager/helpers.js';

describe('release.lua and dequeue.lua: the hand-over', () => {
  let env: Setup;
  before(async () => {
    env = await setup(1);
  });
  after(async () => env.close());
  const admin = (): Redis => env.admin[0] as Redis;

  /** `resource` held by `holder`, with `waiters` queued: [token, ticket, ms until its place lapses (negative: lapsed)]. */
  async function scene(resource: string, holder: string, waiters: ReadonlyArray<readonly [string, number, number]>): Promise<void> {
    const k = keysOf(resource);
    const now = Date.now();
    await admin().set(k.lock, holder, 'PX', 60_000);
    for (const [token, ticket, leaseMs] of waiters) {
      await admin().zadd(k.queue, ticket, token);
      await admin().zadd(k.leases, now + leaseMs, token);
    }
  }
  /** A connection subscribed to `channel`, and the messages it heard, in order. */
  async function listen(channel: string): Promise<{ heard: string[]; listener: Redis }> {
    const listener = admin().duplicate();
    const heard: string[] = [];
    listener.on('message', (_channel: string, message: string) => heard.push(message));
    await listener.subscribe(channel);
    return { heard, listener };
  }
  const release = (resource: string, token: string): Promise<unknown> => admin().eval(releaseLua, 1, keysOf(resource).lock, token);
  /** release.lua with a successor (redlock.ts releaseTo): its token, ticket and ttl; no fence hint, no age. */
  const releaseTo = (resource: string, token: string, successor: string, ticket: string, ttl: string, marker: string): Promise<unknown> =>
    admin().eval(releaseLua, 2, keysOf(resource).lock, marker, token, '', successor, ticket, ttl, '0');

  test('goes to the first waiter whose place is live, skipping and dropping lapsed places; PX = what is left of its place', async () => {
    const r = uniqueResource('lapsed');
    await scene(r, 'holder', [
      ['dead1', 1, -100],
      ['dead2', 2, -1],
      ['live3', 3, 2_000],
      ['live4', 4, 2_000],
    ]);
    assert.equal(await release(r, 'holder'), 1);
    const k = keysOf(r);
    assert.equal(await admin().get(k.lock), 'live3');
    const pttl = await admin().pttl(k.lock);
    assert.ok(pttl > 1_000 && pttl <= 2_000, `the handed key lives as long as the waiter's place: ${pttl} ms`);
    assert.deepEqual(await admin().zrange(k.queue, '0', '-1'), ['live4'], 'the lapsed places and the new holder left the queue');
    assert.deepEqual(await admin().zrange(k.leases, '0', '-1'), ['live4']);
  });

  test('only lapsed places: deleted, as with nobody queued', async () => {
    const r = uniqueResource('all-dead');
    await scene(r, 'holder', [['dead', 1, -5]]);
    await release(r, 'holder');
    assert.equal(await admin().exists(keysOf(r).lock), 0);
  });

  test('another owner’s key is never touched', async () => {
    const r = uniqueResource('not-ours');
    await scene(r, 'someone', [['w', 1, 2_000]]);
    assert.equal(await release(r, 'holder'), 0);
    assert.equal(await admin().get(keysOf(r).lock), 'someone');
    assert.deepEqual(await admin().zrange(keysOf(r).queue, '0', '-1'), ['w']);
  });

  test('a parked caller of the releasing process gets it only when it arrived before the first live waiter, granted there and then', async () => {
    const marker = markerKey('fencelock:');
    const early = uniqueResource('successor-early');
    await scene(early, 'holder', [['other', 20, 2_000]]);
    const counter = BigInt((await admin().hget(marker, 'fence')) ?? '0');
    const granted = await releaseTo(early, 'holder', 'mine', '10', '3000', marker);
    assert.equal(await admin().get(keysOf(early).lock), 'mine', 'arrived at 10, before the waiter of 20');
    assert.deepEqual(await admin().zrange(keysOf(early).queue, '0', '-1'), ['other'], 'who keeps its place');
    const pttl = await admin().pttl(keysOf(early).lock);
    assert.ok(pttl > 2_000 && pttl <= 3_000, `held for the ttl it asked: ${pttl} ms`);
    // The grant reply of acquire.lua: '1 fence epoch age trusted longest', with a fence above every earlier one.
    const [ok, fence, epoch] = String(granted).split(' ');
    assert.equal(ok, '1', `a grant reply: ${String(granted)}`);
    assert.equal(BigInt(fence ?? '0'), counter + 1n, 'the node counter, incremented');
    assert.equal(epoch, await admin().hget(marker, 'epoch'));

    const late = uniqueResource('successor-late');
    await scene(late, 'holder', [['other', 20, 2_000]]);
    assert.equal(await releaseTo(late, 'holder', 'mine', '30', '3000', marker), 1, 'released, no grant');
    assert.equal(await admin().get(keysOf(late).lock), 'other', 'arrived at 30, after the waiter of 20');

    const gone = uniqueResource('successor-not-ours');
    await scene(gone, 'someone', []);
    assert.equal(await releaseTo(gone, 'holder', 'mine', '10', '3000', marker), 0, 'not our key: nothing released, nothing granted');
    assert.equal(await admin().get(keysOf(gone).lock), 'someone');
  });

  test('given the marker, the release grants the waiter the lock: a fence above the hint, the grant told on its channel', async () => {
    const marker = markerKey('fencelock:');
    const r = uniqueResource('granted');
    const k = keysOf(r);
    const waiter = 'mgr00001' + 'w'.repeat(24);
    await scene(r, 'holder', [
      ['deadbeef' + 'd'.repeat(24), 1, -50],
      [waiter, 2, 2_000],
    ]);
    const counter = BigInt((await admin().hget(marker, 'fence')) ?? '0');
    const hint = (counter + 40n).toString();
    const { heard, listener } = await listen(`${k.channel}:mgr00001`);
    try {
      assert.equal(await admin().eval(releaseLua, 2, k.lock, marker, 'holder', hint), 1);
      assert.equal(await admin().get(k.lock), waiter, 'the live head, past the lapsed place');
      const pttl = await admin().pttl(k.lock);
      assert.ok(pttl > 1_000 && pttl <= 2_000, `the handed key lives as long as the waiter's place: ${pttl} ms`);
      await eventually(async () => heard.length > 0, 2_000);
      const [token, ok, fence, epoch, age, trusted, longest] = (heard[0] as string).split(' ');
      assert.equal(token, waiter, `the message names the waiter first: ${heard[0]}`);
      assert.equal(ok, '1', 'then a grant reply, as acquire.lua would give it');
      assert.equal(BigInt(fence ?? '0'), counter + 41n, 'the counter raised to the hint, then incremented');
      assert.equal(await admin().hget(marker, 'fence'), fence, 'the node counter is the fence');
      assert.equal(epoch, await admin().hget(marker, 'epoch'));
      assert.ok(Number(age) >= 0, `with the marker's age, for the waiter's restart quarantine: ${age}`);
      assert.ok(trusted === '0' || trusted === '1');
      assert.ok(Number(longest) >= 0, `and the longest ttl: ${longest}`);
      assert.deepEqual(await admin().zrange(k.queue, '0', '-1'), [], 'the granted waiter and the lapsed place left the queue');
      assert.deepEqual(await admin().zrange(k.leases, '0', '-1'), []);
    } finally {
      listener.disconnect();
    }
  });

  test('a waiter whose token has a dot after its manager id is sent the grant alone; an older waiter, then its token', async () => {
    const marker = markerKey('fencelock:');
    for (const [waiter, expected] of [
      ['mgr00003.' + 'n'.repeat(24), 'grant'],
      ['mgr00003' + 'o'.repeat(24), 'grant, token'],
    ] as const) {
      const r = uniqueResource('grant-alone');
      const k = keysOf(r);
      await scene(r, 'holder', [[waiter, 1, 2_000]]);
      const { heard, listener } = await listen(`${k.channel}:mgr00003`);
      try {
        assert.equal(await admin().eval(releaseLua, 2, k.lock, marker, 'holder', '1'), 1);
        // Messages of one channel arrive in order: once this one is heard, everything the release sent was.
        await admin().publish(`${k.channel}:mgr00003`, 'end');
        await eventually(async () => heard.includes('end'), 2_000);
        const told = heard.slice(0, -1).map((m) => (m === waiter ? 'token' : m.startsWith(`${waiter} 1 `) ? 'grant' : m));
        assert.equal(told.join(', '), expected, `what ${waiter} was told: ${JSON.stringify(heard)}`);
      } finally {
        listener.disconnect();
      }
    }
  });

  test('without the marker (an older release, dequeue.lua), the waiter is told its token alone and no fence is issued', async () => {
    const marker = markerKey('fencelock:');
    const r = uniqueResource('older-release-script');
    const k = keysOf(r);
    const waiter = 'mgr00002' + 'o'.repeat(24);
    await scene(r, 'holder', [[waiter, 1, 1_500]]);
    const { heard, listener } = await listen(`${k.channel}:mgr00002`);
    try {
      const counter = await admin().hget(marker, 'fence');
      assert.equal(await release(r, 'holder'), 1);
      assert.equal(await admin().get(k.lock), waiter);
      await eventually(async () => heard.length > 0, 2_000);
      assert.deepEqual(heard, [waiter], 'the token alone: its next attempt confirms the grant (acquire.lua)');
      assert.equal(await admin().hget(marker, 'fence'), counter, 'no fence issued for it');
    } finally {
      listener.disconnect();
    }
  });

  test('a waiter that gave up passes on a key handed to it, to the next live waiter', async () => {
    const r = uniqueResource('gave-up');
    const k = keysOf(r);
    await scene(r, 'quitter', [['next', 5, 2_000]]);
    await admin().zadd(k.queue, '1', 'quitter');
    const left = await admin().eval(dequeueLua, 3, k.lock, k.queue, k.leases, 'quitter', k.channel, '1');
    assert.equal(left, 1);
    assert.equal(await admin().get(k.lock), 'next');
    assert.deepEqual(await admin().zrange(k.queue, '0', '-1'), []);
  });

  test('a holder leaving a queue it was still in (it won on a quorum elsewhere) keeps a key handed to it', async () => {
    const r = uniqueResource('holder-leaves');
    const k = keysOf(r);
    await scene(r, 'winner', [['next', 5, 2_000]]);
    await admin().zadd(k.queue, '1', 'winner');
    await admin().zadd(k.leases, String(Date.now() + 2_000), 'winner');
    assert.equal(await admin().eval(dequeueLua, 3, k.lock, k.queue, k.leases, 'winner', k.channel, '0'), 1);
    assert.equal(await admin().get(k.lock), 'winner', 'its key stays');
    assert.deepEqual(await admin().zrange(k.queue, '0', '-1'), ['next'], 'it left the queue');
    assert.deepEqual(await admin().zrange(k.leases, '0', '-1'), ['next']);
  });

  test('nobody waiting: a compare-and-delete that announces nothing; an unfair waiter watching: announced with *', async () => {
    const r = uniqueResource('quiet');
    const k = keysOf(r);
    const listener = admin().duplicate();
    const heard: string[] = [];
    listener.on('pmessage', (_p: string, channel: string, message: string) => heard.push(`${channel} ${message}`));
    await listener.psubscribe(`${k.channel}*`);
    try {
      await scene(r, 'holder', []);
      assert.equal(await release(r, 'holder'), 1);
      assert.equal(await admin().exists(k.lock), 0);
      // Messages of one server arrive in order: once this mark is heard, anything the release published was too.
      await admin().publish(`${k.channel}:mark`, 'mark');
      await eventually(async () => heard.length > 0, 2_000);
      assert.deepEqual(heard.splice(0), [`${k.channel}:mark mark`], 'a release with nobody waiting announces nothing');
      // A waiter outside the queue (fair: false) asks for the announcement with <base>:watch (acquire.lua 'w').
      await scene(r, 'holder', []);
      await admin().set(`fencelock:{${r}}:watch`, '1', 'PX', 2_000);
      assert.equal(await release(r, 'holder'), 1);
      assert.equal(await admin().exists(k.lock), 0);
      await eventually(async () => heard.length > 0, 2_000);
      assert.deepEqual(heard, [`${k.channel} *`], 'the watched release was announced');
    } finally {
      listener.disconnect();
    }
  });

  test('a waiter outside the queue leaves a watch that expires with its queue lease, never a queue', async () => {
    const r = uniqueResource('watch');
    const k = keysOf(r);
    const locks = await readyManager(env, 'ioredis', { ttl: 5_000 });
    const other = await readyManager(env, 'ioredis', { ttl: 5_000 });
    const holder = await locks.acquire(r);
    const waiting = other.acquire(r, { fair: false, timeout: 10_000, retry: { minDelay: 50, maxDelay: 100 } });
    const watch = `fencelock:{${r}}:watch`;
    await eventually(async () => (await admin().exists(watch)) === 1, 5_000);
    const pttl = await admin().pttl(watch);
    assert.ok(pttl > 0 && pttl <= 5_000, `the watch expires on its own: ${pttl} ms`);
    assert.equal(await admin().exists(k.queue), 0, 'an unfair waiter is not queued');
    await holder.release();
    const lock = await within(waiting, 5_000, 'the unfair waiter');
    await lock.release();
    await locks.close();
    await other.close();
  });

  test('a waiter told by an older release (its token alone, no grant) confirms with one attempt and gets the lock', async () => {
    const r = uniqueResource('older-release');
    const k = keysOf(r);
    // The waiter's backoff outlasts the test: only the release's message can wake it.
    const locks = await readyManager(env, 'ioredis', {
      ttl: 5_000,
      retry: { minDelay: 10_000, maxDelay: 10_000, jitter: 'none' as const },
    });
    try {
      await admin().set(k.lock, 'older-holder', 'PX', 60_000);
      const waiting = locks.acquire(r, { timeout: 8_000 });
      await eventually(async () => (await admin().zcard(k.queue)) === 1, 5_000);
      // release.lua as an older fencelock sends it: no marker, no hint.
      assert.equal(await release(r, 'older-holder'), 1);
      const lock = await within(waiting, 5_000, 'the waiter');
      assert.equal(await admin().get(k.lock), lock.value);
      const pttl = await admin().pttl(k.lock);
      assert.ok(pttl > 4_000, `its confirming attempt set its own ttl: ${pttl} ms`);
      assert.ok(lock.remaining() > 4_000, `dated from that attempt: ${lock.remaining()} ms`);
      await lock.release();
    } finally {
      await locks.close();
    }
  });

  test('a waiter that gave up with nobody behind it deletes a key handed to it', async () => {
    const r = uniqueResource('gave-up-alone');
    const k = keysOf(r);
    await scene(r, 'quitter', []);
    await admin().eval(dequeueLua, 3, k.lock, k.queue, k.leases, 'quitter', k.channel, '1');
    assert.equal(await admin().exists(k.lock), 0);
  });
});

describe('Redlock: a hand-over split across waiters', () => {
  let env: Setup;
  before(async () => {
    env = await setup(5);
  });
  after(async () => env.close());

  /** `resource` held by one manager, and another manager's waiter queued on every node behind it. */
  async function heldWithWaiter(resource: string) {
    const locks = await readyManager(env, 'ioredis', { ttl: 5000, nodeTimeout: 200 });
    const other = await readyManager(env, 'ioredis', { ttl: 5000, nodeTimeout: 200 });
    const holder = await locks.acquire(resource);
    const waiting = other.acquire(resource, { timeout: 10_000 });
    await eventually(async () => (await queued(env.admin, resource)).every((q) => q.length === 1), 10_000);
    const waiter = (await queued(env.admin, resource))[0]?.[0] as string;
    return { k: keysOf(resource), holder, waiting, waiter };
  }

  test('a waiter handed a quorum takes it up at once; where the release handed it nothing, it leaves its place', async () => {
    const resource = uniqueResource('quorum-handed');
    const { k, holder, waiting, waiter } = await heldWithWaiter(resource);
    // On nodes 3 and 4 the holder's key is gone and another owner's is there (its lease ran out there, say):
    // the release hands the waiter nodes 0-2 only, and nodes 3 and 4 keep its place until it leaves.
    for (const admin of env.admin.slice(3)) await admin.set(k.lock, 'intruder', 'PX', 60_000);
    await holder.release();
    const lock = await within(waiting, 5000, 'the waiter, handed three of five nodes');
    assert.equal(lock.value, waiter);
    assert.ok(lock.fence > holder.fence, `fence ${lock.fence} after ${holder.fence}`);
    assert.deepEqual(await lockValues(env.admin, resource), [waiter, waiter, waiter, 'intruder', 'intruder']);
    // It left the queues of nodes 3 and 4 (after its turn, in the background), and touched nobody's key there.
    await eventually(async () => (await queued(env.admin, resource)).every((q) => q.length === 0), 5000);
    for (const admin of env.admin) assert.equal(await admin.zscore(k.leases, waiter), null);
    assert.equal((await lock.release()).released, 3);
    assert.deepEqual(await lockValues(env.admin, resource), [null, null, null, 'intruder', 'intruder']);
  });

  test('a waiter handed less than a quorum gives its grants back at once, and gets the lock once the split resolves', async () => {
    const resource = uniqueResource('split');
    const { k, holder, waiting, waiter } = await heldWithWaiter(resource);
    // A ghost (a process that died) queued earlier on three nodes only, its place live for 3 s more: the
    // release hands those three nodes to it and the other two to the waiter. Nobody has a quorum. The
    // waiter's timer (at most retry.maxDelay, 1 s) brings an attempt well within the split.
    const ghost = 'ghost000' + 'x'.repeat(24);
    for (const admin of env.admin.slice(0, 3)) {
      await admin.zadd(k.queue, '1', ghost);
      await admin.zadd(k.leases, String(Date.now() + 3000), ghost);
    }
    // Node 4's keyspace events show whether the waiter gave its grant there back (a DEL by release.lua).
    const node4 = env.admin[3] as Redis;
    await node4.config('SET', 'notify-keyspace-events', 'Kg');
    const events = node4.duplicate();
    const seen: string[] = [];
    await events.subscribe(`__keyspace@0__:${k.lock}`);
    events.on('message', (_c: string, event: string) => seen.push(event));
    await holder.release();
    const values = await lockValues(env.admin, resource);
    assert.deepEqual(values.slice(0, 3), [ghost, ghost, ghost], 'the ghost was handed three nodes');
    const lock = await within(waiting, 8000, 'the waiter');
    const givenBack = seen.indexOf('del');
    events.disconnect();
    await node4.config('SET', 'notify-keyspace-events', '');
    assert.ok(givenBack >= 0, `the waiter's grant on node 4 was given back before it got the lock (events: ${seen.join(',')})`);
    assert.equal(lock.value, waiter);
    assert.ok(lock.fence > holder.fence);
    // Once the ghost's places lapsed, the waiter took a quorum (the ghost's last keys may still be expiring).
    const held = (await lockValues(env.admin, resource)).filter((v) => v === waiter).length;
    assert.ok(held >= 3, `the waiter holds ${held} of 5 nodes`);
    await lock.release();
  });
});
