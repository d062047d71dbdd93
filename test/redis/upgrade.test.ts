// Rolling upgrade across the hand-over inside the release: clients of the version before it (their
// scripts kept verbatim in fixtures/old-mutex-scripts.ts) and new clients share one node. They exclude
// each other, neither barges past the other's waiters, and a waiter of either kind gets the lock from a
// release of the other kind. Also the hand-over's own edge: a holder that crashes while others wait.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LockTimeoutError, type Lock, type LockManager } from '../../src/index.js';
import { eventually, setup, type Setup } from '../support/harness.js';
import { keysOf, queued, readyManager, uniqueResource, within } from '../lock-manager/helpers.js';
import { oldAcquireLua, oldReleaseLua } from './fixtures/old-mutex-scripts.js';

const OPTIONS = { ttl: 5000, nodeTimeout: 200, acquireTimeout: 5000 };
const MARKER = 'fencelock:{node}:epoch';
const OLD_TTL = 5000;
/** what an old client's wait.ts asks for a place in line (2 * maxDelay + 4 * nodeTimeout at its defaults) */
const OLD_QUEUE_LEASE = 2800;

/** An old client's mutex waiter: its token starts with its manager's 8-character id, as today's do. */
function oldToken(): string {
  return randomBytes(6).toString('base64url') + randomBytes(18).toString('base64url');
}

/** One attempt of the old acquire.lua; `ticket` '' = a single attempt that does not queue. */
async function oldAcquire(admin: Redis, resource: string, token: string, ticket: string): Promise<{ acquired: boolean; fence: bigint }> {
  const args = [token, String(OLD_TTL), '1', 'e'.repeat(16), ticket, String(OLD_QUEUE_LEASE), ticket === '' ? '0' : '1', '0', ''];
  const reply = String(await admin.eval(oldAcquireLua, 2, keysOf(resource).lock, MARKER, ...args));
  const [ok, value] = reply.split(' ');
  return { acquired: ok === '1', fence: ok === '1' ? BigInt(value as string) : 0n };
}

function oldRelease(admin: Redis, resource: string, token: string): Promise<unknown> {
  return admin.eval(oldReleaseLua, 1, keysOf(resource).lock, token);
}

/** Resolves with the first message on `channel` (a dedicated subscriber connection). */
/** The first message on `channel` that `accept` takes (every message, by default). */
async function firstMessage(
  admin: Redis,
  channel: string,
  accept: (message: string) => boolean = () => true,
): Promise<{ message: Promise<string>; stop: () => void }> {
  const sub = admin.duplicate();
  await sub.subscribe(channel);
  const message = new Promise<string>((resolve) =>
    sub.on('message', (_c: string, m: string) => {
      if (accept(m)) resolve(m);
    }),
  );
  return { message, stop: () => sub.disconnect() };
}

describe('rolling upgrade: the mutex scripts before and after the hand-over, on one node', () => {
  let env: Setup;
  let locks: LockManager;
  let other: LockManager;
  before(async () => {
    env = await setup(1);
    locks = await readyManager(env, 'ioredis', OPTIONS);
    other = await readyManager(env, 'ioredis', OPTIONS);
  });
  after(async () => env.close());
  const admin = (): Redis => env.admin[0] as Redis;

  test('old and new holders exclude each other, and fences keep rising across them', async () => {
    const resource = uniqueResource('mixed');
    const lock = await locks.acquire(resource);
    assert.equal((await oldAcquire(admin(), resource, oldToken(), '')).acquired, false, 'an old client is refused while a new one holds');
    await lock.release();
    const token = oldToken();
    const old = await oldAcquire(admin(), resource, token, '');
    assert.ok(old.acquired && old.fence > lock.fence, 'then the old client gets it, with a higher fence');
    assert.equal(await locks.tryAcquire(resource), null, 'a new client is refused while an old one holds');
    await oldRelease(admin(), resource, token);
    const again = await locks.tryAcquire(resource);
    assert.ok(again && again.fence > old.fence, 'and gets it after the old release, with a higher fence');
    await again.release();
  });

  test('an old waiter behind a new release is handed the lock, told in the old format, and its old acquire takes it', async () => {
    const resource = uniqueResource('old-waiter');
    const lock = await locks.acquire(resource);
    const token = oldToken();
    assert.equal((await oldAcquire(admin(), resource, token, '1.000')).acquired, false, 'queued behind the new holder');
    assert.deepEqual(await queued(env.admin, resource), [[token]]);
    // A new release tells the grant ('<token> 1 fence …', which an old waiter ignores), then the token alone.
    const told = await firstMessage(admin(), `${keysOf(resource).channel}:${token.slice(0, 8)}`, (m) => !m.startsWith(`${token} `));
    try {
      await lock.release();
      assert.equal(await within(told.message, 2000, 'the notification'), token, 'the old waiter is named on its manager channel');
      assert.equal(await admin().get(keysOf(resource).lock), token, 'the key was handed to it');
      assert.equal(await locks.tryAcquire(resource), null, 'nobody else can take it meanwhile');
      const old = await oldAcquire(admin(), resource, token, '1.000');
      assert.ok(old.acquired && old.fence > lock.fence, 'its old acquire takes the key holding its token as its own');
      assert.ok((await admin().pttl(keysOf(resource).lock)) > OLD_QUEUE_LEASE, 'with its own ttl now');
      await oldRelease(admin(), resource, token);
    } finally {
      told.stop();
    }
  });

  test('a new waiter behind an old release gets the lock', async () => {
    const resource = uniqueResource('new-waiter');
    const token = oldToken();
    assert.ok((await oldAcquire(admin(), resource, token, '')).acquired);
    const waiting = locks.acquire(resource);
    await eventually(async () => (await queued(env.admin, resource))[0]?.length === 1, 5000);
    await oldRelease(admin(), resource, token);
    const lock = await within(waiting, 3000, 'the new waiter');
    await lock.release();
  });

  test('a free key with an old waiter queued: a new acquire queues behind it (no barging), the old waiter goes first', async () => {
    const resource = uniqueResource('no-barge');
    const holder = oldToken();
    const waiter = oldToken();
    assert.ok((await oldAcquire(admin(), resource, holder, '')).acquired);
    assert.equal((await oldAcquire(admin(), resource, waiter, '1.000')).acquired, false);
    // The old holder crashed: its key expires (deleted here) and nobody is told.
    await admin().del(keysOf(resource).lock);
    await assert.rejects(locks.acquire(resource, { timeout: 300 }), LockTimeoutError, 'the newcomer waits behind the old waiter');
    const old = await oldAcquire(admin(), resource, waiter, '1.000');
    assert.ok(old.acquired, 'the old waiter, first in line, gets it');
    await oldRelease(admin(), resource, waiter);
  });

  test('a new holder crashes while a new waiter queues: the waiter gets the lock before a newcomer', async () => {
    const resource = uniqueResource('crash');
    await locks.acquire(resource, { ttl: 60_000 });
    const order: string[] = [];
    const take = (name: string) => async (lock: Lock) => {
      order.push(name);
      await lock.release();
    };
    const first = other.acquire(resource).then(take('waiter'));
    await eventually(async () => (await queued(env.admin, resource))[0]?.length === 1, 5000);
    // The holder's process died: its key expires (deleted here), and no release tells anyone.
    await admin().del(keysOf(resource).lock);
    const newcomer = env
      .manager('ioredis', OPTIONS)
      .then((m) => m.acquire(resource))
      .then(take('newcomer'));
    await within(Promise.all([first, newcomer]), 5000, 'both');
    assert.deepEqual(order, ['waiter', 'newcomer']);
  });

  test('a release with waiters hands the key over (never free in between); with none, deletes it', async () => {
    const resource = uniqueResource('handed');
    const lock = await locks.acquire(resource);
    const waiting = other.acquire(resource);
    await eventually(async () => (await queued(env.admin, resource))[0]?.length === 1, 5000);
    const [waiterToken] = (await queued(env.admin, resource))[0] as string[];
    await lock.release();
    assert.equal(await admin().get(keysOf(resource).lock), waiterToken, 'the key holds the waiter’s token right after the release');
    assert.deepEqual(await queued(env.admin, resource), [[]], 'and the waiter left the queue');
    const next = await within(waiting, 3000, 'the waiter');
    assert.ok(next.fence > lock.fence);
    await next.release();
    assert.equal(await admin().exists(keysOf(resource).lock), 0, 'nobody waits: deleted');
  });
});
