// Redis error replies become typed errors that name the node, and nothing a
// user stored is deleted or overwritten: READONLY, NOAUTH / wrong password,
// OOM, BUSY (WRONGTYPE and NOSCRIPT are in node-failures.test.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, QuorumError } from '../../src/index.js';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';

const OPTIONS = { ttl: 3_000, nodeTimeout: 200 };

/** tryAcquire on a one-node manager must reject with QuorumError naming the node, its message matching `pattern`. */
async function rejectsNaming(locks: LockManager, node: LocalRedisNode, pattern: RegExp, resource = 'r'): Promise<void> {
  await assert.rejects(locks.tryAcquire(resource), (e: unknown) => {
    assert.ok(e instanceof QuorumError, `expected QuorumError, got ${String(e)}`);
    assert.equal(e.nodeErrors.length, 1, 'one node error');
    assert.equal(e.nodeErrors[0]!.node, `127.0.0.1:${node.port}`);
    assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${node.port}`), 'the message names the node');
    assert.match(e.message, pattern);
    return true;
  });
}

describe('READONLY: a replica given as a lock node', () => {
  let primary: LocalRedisNode;
  let replica: LocalRedisNode;
  before(async () => {
    // No diskless-sync delay (5 s by default): the replica gets its first copy at once.
    primary = await startRedisNode({ args: ['--repl-diskless-sync-delay', '0'] });
    replica = await startRedisNode({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  });
  after(async () => {
    await replica?.stop();
    await primary?.stop();
  });

  test('acquire fails with an error naming the replica and saying READONLY; the replicated user data is untouched', async () => {
    const admin = new Redis(primary.url);
    const replicaAdmin = new Redis(replica.url);
    try {
      await admin.set('user:data', 'keep me');
      await eventually(async () => (await replicaAdmin.get('user:data')) === 'keep me', 5_000);
      const locks = new LockManager([replica.url], OPTIONS);
      try {
        await rejectsNaming(locks, replica, /READONLY/);
      } finally {
        await locks.close();
      }
      assert.equal(await replicaAdmin.get('user:data'), 'keep me');
      assert.equal(await replicaAdmin.exists('fencelock:{r}:lock'), 0, 'no lock key on the replica');
    } finally {
      admin.disconnect();
      replicaAdmin.disconnect();
    }
  });
});

describe('NOAUTH and a wrong password', () => {
  let node: LocalRedisNode;
  before(async () => {
    node = await startRedisNode({ args: ['--requirepass', 's3cret'] });
  });
  after(async () => {
    await node?.stop();
  });

  test('no password: the error names the node and says NOAUTH', async () => {
    const locks = new LockManager([node.url], OPTIONS);
    try {
      await rejectsNaming(locks, node, /NOAUTH|Authentication required/i);
    } finally {
      await locks.close();
    }
  });

  test('a wrong password: the error names the node and says WRONGPASS', async () => {
    const locks = new LockManager([`redis://:wrong@127.0.0.1:${node.port}`], OPTIONS);
    try {
      await rejectsNaming(locks, node, /WRONGPASS|invalid password|NOAUTH/i);
    } finally {
      await locks.close();
    }
  });

  test('the right password works', async () => {
    const locks = new LockManager([`redis://:s3cret@127.0.0.1:${node.port}`], OPTIONS);
    try {
      const lock = await locks.acquire('r');
      assert.equal((await lock.release()).released, 1);
    } finally {
      await locks.close();
    }
  });
});

describe('OOM: maxmemory with noeviction', () => {
  let node: LocalRedisNode;
  before(async () => {
    node = await startRedisNode({ args: ['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction'] });
  });
  after(async () => {
    await node?.stop();
  });

  test('a full node fails acquire with OOM naming the node; the data that filled it is intact', async () => {
    const admin = new Redis(node.url);
    try {
      const big = 'x'.repeat(64 * 1024);
      let written = 0;
      for (let i = 0; i < 200; i++) {
        const ok = await admin.set(`fill:${i}`, big).then(
          () => true,
          () => false,
        );
        if (!ok) break;
        written++;
      }
      assert.ok(written > 0 && written < 200, `filled with ${written} values before OOM`);
      const locks = new LockManager([node.url], OPTIONS);
      try {
        await rejectsNaming(locks, node, /OOM/);
      } finally {
        await locks.close();
      }
      assert.equal(await admin.strlen('fill:0'), big.length, 'user data intact');
      assert.equal(await admin.dbsize(), written, 'nothing deleted, no lock key added');
    } finally {
      admin.disconnect();
    }
  });
});

describe('BUSY: a long-running script on the node', () => {
  let node: LocalRedisNode;
  before(async () => {
    node = await startRedisNode({ args: ['--busy-reply-threshold', '50'] });
  });
  after(async () => {
    await node?.stop();
  });

  test('acquire fails fast with BUSY naming the node, and works once the script is killed', async () => {
    const blocker = new Redis(node.url);
    const admin = new Redis(node.url);
    blocker.on('error', () => undefined);
    const locks = new LockManager([node.url], OPTIONS);
    try {
      await (await locks.acquire('warm')).release(); // connected, scripts loaded
      const busy = blocker.eval('local i = 0 while true do i = i + 1 end', 0).catch((e: Error) => e);
      await eventually(async () => /BUSY/.test(String(await admin.ping().catch((e: Error) => e.message))), 5_000, 20);
      const t = performance.now();
      await rejectsNaming(locks, node, /BUSY/);
      assert.ok(performance.now() - t < OPTIONS.nodeTimeout * 3, 'fails within the node timeouts');
      await admin.script('KILL');
      assert.match(String(await busy), /killed|ERR/i);
      const lock = await locks.acquire('r');
      assert.equal((await lock.release()).released, 1);
    } finally {
      await locks.close();
      blocker.disconnect();
      admin.disconnect();
    }
  });
});
