// The CLI against an etcd cluster: --etcd (and FENCELOCK_ETCD) in place of --nodes on inspect, release, run
// and watch; bad usage is exit 2 before anything connects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LockManager } from '../../src/index.js';
import { startEtcdCluster, type LocalEtcdCluster } from '../../src/testing/index.js';
import { runCli } from '../support/child.js';
import { requireEtcd } from '../support/optional.js';

describe('fencelock CLI with --etcd', { skip: requireEtcd('etcd (the CLI on etcd)') }, () => {
  let cluster: LocalEtcdCluster;
  let locks: LockManager;
  before(async () => {
    cluster = await startEtcdCluster({ members: 3 });
    locks = new LockManager(cluster.url, { ttl: 30_000 });
  });
  after(async () => {
    await locks?.close();
    await cluster?.stop();
  });

  test('inspect --etcd --json shows the holder and its fence; release --etcd --force --yes takes the lock away', async () => {
    const lock = await locks.acquire('cli:etcd');
    const r = await runCli(['inspect', 'cli:etcd', '--etcd', cluster.url, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout) as { holder: string; fence: string; nodes: Array<{ node: string; remaining: number }> };
    assert.equal(info.holder, lock.value);
    assert.equal(info.fence, lock.fence.toString());
    assert.equal(info.nodes.length, 1);
    assert.ok(info.nodes[0]!.remaining > 20_000, `remaining ${info.nodes[0]!.remaining}`);
    const released = await runCli(['release', 'cli:etcd', '--force', '--yes', '--json'], 60_000, { FENCELOCK_ETCD: cluster.url });
    assert.equal(released.code, 0, released.stderr);
    assert.deepEqual(JSON.parse(released.stdout), { resource: 'cli:etcd', released: 1, nodes: 1 });
    await assert.rejects(lock.extend());
  });

  test('run --etcd holds the lock while the command runs, with a fence in its environment', async () => {
    const r = await runCli(
      ['run', '--etcd', cluster.url, '--ttl', '3000', 'cli:etcd-run', '--', 'sh', '-c', 'echo "fence=$FENCELOCK_FENCE"'],
      60_000,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /fence=\d+/);
    assert.equal((await locks.inspect('cli:etcd-run')).holder, null, 'released when the command exited');
  });

  test('watch --etcd --count 1 --json shows a held lock, its fence and its lease', async () => {
    const lock = await locks.acquire('cli:etcd-watch');
    try {
      const r = await runCli(['watch', 'cli:etcd-watch', '--count', '1', '--json'], 60_000, { FENCELOCK_ETCD: cluster.url });
      assert.equal(r.code, 0, r.stderr);
      const line = JSON.parse(r.stdout) as { resources: Array<{ holder: string; fence: string }> };
      assert.equal(line.resources[0]!.holder, lock.value);
      assert.equal(line.resources[0]!.fence, lock.fence.toString());
    } finally {
      await lock.release();
    }
  });

  test('--nodes with --etcd, or a bad etcd URL, is bad usage (exit 2)', async () => {
    const both = await runCli(['inspect', 'x', '--etcd', cluster.url, '--nodes', 'redis://127.0.0.1:6390']);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /not both/);
    const bad = await runCli(['inspect', 'x', '--etcd', 'http://127.0.0.1:2379']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /etcd:\/\//);
  });
});
