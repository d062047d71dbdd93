import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually } from '../support/harness.js';
import { isAlive, runCli } from '../support/child.js';

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

test('demo with chaos: nothing oversold, the frozen worker is fenced off, every node stopped', async (t) => {
  const r = await runCli(['demo', '--workers', '4', '--stock', '120', '--ttl', '600', '--json'], 90_000);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as Report;
  t.diagnostic(`events: ${report.events.join(' | ')}`);
  assert.equal(report.ok, true);
  assert.equal(report.oversold, 0);
  assert.equal(report.unitsSold, 120);
  assert.equal(report.stockLeft, 0);
  assert.ok(report.staleWritesRejected >= 1, `stale writes rejected: ${report.staleWritesRejected}`);
  assert.ok(report.nodeFaultsSurvived >= 2, `node faults: ${report.nodeFaultsSurvived}`);
  assert.equal(report.fencesIncreasing, true);
  assert.ok(report.acquisitions >= 120);
  assert.equal(report.localNodes.length, 6);
  // Nodes are stopped before the process exits; allow the kernel a moment to reap them.
  await eventually(() => report.localNodes.every((n) => !isAlive(n.pid)), 5_000);
});

test('demo without chaos prints a plain report with the verdict', async () => {
  const r = await runCli(['demo', '--workers', '2', '--stock', '30', '--no-chaos'], 60_000);
  assert.equal(r.code, 0, r.stderr);
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
