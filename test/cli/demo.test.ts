import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually } from '../support/harness.js';
import { isAlive, runCli } from '../support/child.js';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';

interface Report {
  unitsSold: number;
  stock: number;
  stockLeft: number;
  oversold: number;
  staleWritesRejected: number;
  acquisitions: number;
  nodeFaultsSurvived: number;
  fencesIncreasing: boolean;
  ok: boolean;
  localNodes: Array<{ url: string; pid: number }>;
  events: string[];
}

/** A chaos run's report: all sold, nothing oversold, the frozen worker fenced off, faults survived, every server process gone. */
async function assertPassedChaos(report: Report, stock: number): Promise<void> {
  assert.equal(report.ok, true);
  assert.equal(report.oversold, 0);
  assert.equal(report.unitsSold, stock);
  assert.equal(report.stockLeft, 0);
  assert.ok(report.staleWritesRejected >= 1, `stale writes rejected: ${report.staleWritesRejected}`);
  assert.ok(report.nodeFaultsSurvived >= 2, `node faults: ${report.nodeFaultsSurvived}`);
  assert.equal(report.fencesIncreasing, true);
  assert.ok(report.acquisitions >= stock);
  // Servers are stopped before the process exits; allow the kernel a moment to reap them.
  await eventually(() => report.localNodes.every((n) => !isAlive(n.pid)), 5_000);
}

/**
 * Units sold in each chaos run. The faults fire by progress (1/3, 1/2, 2/3 sold), so every one of them fires
 * at any stock; what a larger stock adds is selling time: 120 units took the etcd run 25 s, the ZooKeeper run
 * 16 s and the Redis run 11 s (2026-11-27, load average 7-10). At 60 the frozen worker still sleeps through
 * its lease with 30 units left for the others, and its late write is turned away whether they sold the rest
 * before it woke or not (its fence is behind theirs either way).
 */
const STOCK = 60;

// Two groups side by side: the chaos runs one after another (each times a freeze against its lease), and the
// short runs (usage errors, the plain report: ten CLI processes, a few seconds of CPU in all), which would
// otherwise wait ~10 s behind them. etcd's run goes first: its 2 s lease tolerates the short runs' load best.
describe('demo', { concurrency: 2 }, () => {
  describe('with chaos, one run at a time', { concurrency: 1 }, () => {
    test(
      'demo --backend etcd: the leader killed, a member paused, a worker frozen and fenced off; every process stopped',
      { skip: requireEtcd('etcd (demo --backend etcd)') },
      async (t) => {
        const r = await runCli(['demo', '--backend', 'etcd', '--workers', '4', '--stock', String(STOCK), '--json'], 120_000);
        assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-3000)}`);
        const report = JSON.parse(r.stdout) as Report;
        t.diagnostic(`events: ${report.events.join(' | ')}`);
        await assertPassedChaos(report, STOCK);
        assert.ok(
          report.events.some((e) => /etcd member .* killed/.test(e)),
          'the leader was killed',
        );
        assert.equal(report.localNodes.length, 4, 'the storage node and three etcd members');
      },
    );

    test(
      'demo --backend zookeeper: the leader killed, a server paused, a worker frozen and fenced off; every process stopped',
      { skip: requireZooKeeper('ZooKeeper (demo --backend zookeeper)') },
      async (t) => {
        const r = await runCli(['demo', '--backend', 'zookeeper', '--workers', '4', '--stock', String(STOCK), '--json'], 120_000);
        assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-3000)}`);
        const report = JSON.parse(r.stdout) as Report;
        t.diagnostic(`events: ${report.events.join(' | ')}`);
        await assertPassedChaos(report, STOCK);
        assert.ok(
          report.events.some((e) => /ZooKeeper server .* killed/.test(e)),
          'the leader was killed',
        );
        assert.ok(
          report.events.some((e) => /ZooKeeper server .* back, with its data: it rejoins by Zab/.test(e)),
          'the leader came back',
        );
        assert.equal(report.localNodes.length, 4, 'the storage node and three ZooKeeper servers');
        assert.equal(report.localNodes.filter((n) => n.url.startsWith('zk://')).length, 3);
        assert.ok(
          report.localNodes.every((n) => typeof n.pid === 'number'),
          'every server listed with its PID',
        );
      },
    );

    test('demo with chaos: nothing oversold, the frozen worker is fenced off, every node stopped', async (t) => {
      const r = await runCli(['demo', '--workers', '4', '--stock', String(STOCK), '--ttl', '600', '--json'], 90_000);
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-3000)}`);
      const report = JSON.parse(r.stdout) as Report;
      t.diagnostic(`events: ${report.events.join(' | ')}`);
      await assertPassedChaos(report, STOCK);
      assert.equal(report.localNodes.length, 6);
    });
  });

  describe('without chaos, and refusals', { concurrency: true }, () => {
    test('demo --backend zookeeper refuses --nodes, and --break lock in the orders scenario (exit 2)', async () => {
      const nodes = await runCli(['demo', '--backend', 'zookeeper', '--nodes', 'redis://127.0.0.1:6390'], 20_000);
      assert.equal(nodes.code, 2, nodes.stderr);
      assert.match(nodes.stderr, /--nodes names Redis lock nodes: not with --backend zookeeper/);
      const broken = await runCli(['demo', '--scenario', 'orders', '--backend', 'zookeeper', '--break', 'lock'], 20_000);
      assert.equal(broken.code, 2, broken.stderr);
      assert.match(broken.stderr, /--break lock needs Redis: on ZooKeeper the lease is the session/);
    });

    test('demo without chaos prints a plain report with the verdict', async () => {
      const r = await runCli(['demo', '--workers', '2', '--stock', '30', '--no-chaos'], 60_000);
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-3000)}`);
      assert.match(r.stdout, /units sold\s+30 of 30/);
      assert.match(r.stdout, /oversold\s+0/);
      assert.match(r.stdout, /verdict\s+PASS/);
      assert.match(r.stdout, /chaos: off/);
    });

    test('demo rejects bad flags with exit code 2 and says which', async () => {
      for (const args of [['--workers', '0'], ['--stock', 'many'], ['--ttl', '100'], ['--bogus'], ['--nodes', 'http://x']]) {
        const r = await runCli(['demo', ...args], 20_000);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(args[0]!.replace(/^--/, '')), `${args.join(' ')}: ${r.stderr}`);
      }
    });

    test('demo names unreachable nodes and exits 1', async () => {
      const r = await runCli(
        ['demo', '--nodes', 'redis://127.0.0.1:1,redis://127.0.0.1:2', '--storage', 'redis://127.0.0.1:3', '--json'],
        20_000,
      );
      assert.equal(r.code, 1);
      assert.match(r.stderr, /cannot reach/);
      assert.match(r.stderr, /127\.0\.0\.1:1\b/);
      assert.match(r.stderr, /127\.0\.0\.1:3\b/);
    });
  });
});
