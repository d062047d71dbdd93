// The CLI against a ZooKeeper ensemble: --zk (and FENCELOCK_ZK) in place of --nodes on inspect, release, run
// and watch; bad usage is exit 2 before anything connects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LockManager } from '../../src/index.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { runCli } from '../support/child.js';
import { requireZooKeeper } from '../support/optional.js';

describe('fencelock CLI with --zk', { skip: requireZooKeeper('ZooKeeper (the CLI on ZooKeeper)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  let locks: LockManager;
  before(async () => {
    ensemble = await startZooKeeperEnsemble({ servers: 3 });
    locks = new LockManager(ensemble.url, { ttl: 30_000 });
  });
  after(async () => {
    await locks?.close();
    await ensemble?.stop();
  });

  test('inspect --zk --json shows the holder and its fence; release --zk --force --yes takes the lock away', async () => {
    const lock = await locks.acquire('cli:zk');
    const r = await runCli(['inspect', 'cli:zk', '--zk', ensemble.url, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout) as { holder: string; fence: string; nodes: Array<{ node: string; remaining: number }> };
    assert.equal(info.holder, lock.value);
    assert.equal(info.fence, lock.fence.toString());
    assert.equal(info.nodes.length, 1, 'the ensemble answers as one');
    assert.equal(info.nodes[0]!.remaining, -1, 'the lease is the holder’s session: no expiry of its own');
    const text = await runCli(['inspect', 'cli:zk'], 60_000, { FENCELOCK_ZK: ensemble.url });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /until released/);
    const released = await runCli(['release', 'cli:zk', '--force', '--yes', '--json'], 60_000, { FENCELOCK_ZK: ensemble.url });
    assert.equal(released.code, 0, released.stderr);
    assert.deepEqual(JSON.parse(released.stdout), { resource: 'cli:zk', released: 1, nodes: 1 });
    await assert.rejects(lock.extend());
  });

  test('run --zk holds the lock while the command runs, with a fence in its environment', async () => {
    const r = await runCli(
      ['run', '--zk', ensemble.url, '--ttl', '3000', 'cli:zk-run', '--', 'sh', '-c', 'echo "fence=$FENCELOCK_FENCE"'],
      60_000,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /fence=\d+/);
    assert.equal((await locks.inspect('cli:zk-run')).holder, null, 'released when the command exited');
  });

  test('watch --zk --count 1 --json shows a held lock', async () => {
    const lock = await locks.acquire('cli:zk-watch');
    try {
      const r = await runCli(['watch', 'cli:zk-watch', '--zk', ensemble.url, '--count', '1', '--json']);
      assert.equal(r.code, 0, r.stderr);
      const line = JSON.parse(r.stdout) as { resources: Array<{ holder: string; fence: string }> };
      assert.equal(line.resources[0]!.holder, lock.value);
      assert.equal(line.resources[0]!.fence, lock.fence.toString());
    } finally {
      await lock.release();
    }
  });

  test('--nodes with --zk, --etcd with --zk, or a bad zk URL, is bad usage (exit 2)', async () => {
    const both = await runCli(['inspect', 'x', '--zk', ensemble.url, '--nodes', 'redis://127.0.0.1:6390']);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /not both/);
    const etcd = await runCli(['release', 'x', '--force', '--yes', '--zk', ensemble.url, '--etcd', 'etcd://127.0.0.1:2379']);
    assert.equal(etcd.code, 2, etcd.stderr);
    assert.match(etcd.stderr, /not both/);
    const env = await runCli(['inspect', 'x'], 60_000, { FENCELOCK_ZK: ensemble.url, FENCELOCK_NODES: 'redis://127.0.0.1:6390' });
    assert.equal(env.code, 2, env.stderr);
    assert.match(env.stderr, /FENCELOCK_NODES and FENCELOCK_ZK/);
    for (const url of ['127.0.0.1:2181', 'zk://127.0.0.1', 'http://127.0.0.1:2181']) {
      const bad = await runCli(['inspect', 'x', '--zk', url]);
      assert.equal(bad.code, 2, `${url}: ${bad.stderr}`);
      assert.match(bad.stderr, /zk:\/\//);
    }
  });
});
