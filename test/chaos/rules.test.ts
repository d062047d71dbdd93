// The chaos generator's CI budget, part 2: the library passes it. A short run under every rule finds no
// violation, on Redis and (--backend) on etcd and on ZooKeeper, skipped without them. Beside the other files: no
// violation under the rules is the claim at any load (part 1, the planted flaws found, is teeth.test.ts, alone).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';
import { chaos } from './run-chaos.js';

// Two at a time: each mostly waits (on its schedule's 2.5-4 s of workload, on starting nodes, members and workers:
// ~6 s of CPU in ~15 s). The timeouts bound a hang: beside the other files a schedule took up to 16 s (2026-11-27).
describe('under every rule', { concurrency: 2 }, () => {
  test('a short run under every rule: 4 schedules, 0 violations', async () => {
    const run = await chaos(['--seed', '1', '--schedules', '4'], 150_000);
    console.log(`# ${run.output.trim().split('\n').at(-1)}`);
    assert.equal(run.schedules, 4);
    assert.ok(run.operations > 20 && run.faults > 5, run.output);
    assert.equal(run.violations, 0, run.output);
  });

  // etcd and ZooKeeper (--backend): a short run under every rule finds no violation, with faults applied and
  // operations done. Measured: about 11 s a schedule for either (starting 3 members, a Redis store and the workers).
  for (const [backend, skip] of [
    ['etcd', requireEtcd('etcd (the chaos run on etcd)')],
    ['zookeeper', requireZooKeeper('ZooKeeper (the chaos run on ZooKeeper)')],
  ] as const) {
    test(`--backend ${backend}: a short run under every rule: 1 schedule, 0 violations`, { skip }, async () => {
      const run = await chaos(['--backend', backend, '--seed', '1', '--schedules', '1'], 90_000);
      console.log(`# ${run.output.trim().split('\n').at(-1)}`);
      assert.equal(run.schedules, 1);
      assert.ok(run.operations > 0 && run.faults > 0, run.output);
      assert.equal(run.violations, 0, run.output);
    });
  }
});
