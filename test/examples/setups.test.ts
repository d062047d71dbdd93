// examples/setups.ts: every setup of docs/choosing.md (and the constructors of docs/cluster.md, docs/etcd.md and
// docs/zookeeper.md, whose blocks point here) on real local servers: a hold, a caller refused meanwhile, and a
// later hold with a larger fence. etcd and ZooKeeper skip without their servers locally (fail in CI).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTs } from '../support/child.js';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';

const cases: Array<[setup: string, skip: false | string]> = [
  ['redis', false],
  ['sentinel', false],
  ['redlock', false],
  ['cluster', false],
  ['etcd', requireEtcd('examples/setups.ts etcd')],
  ['zookeeper', requireZooKeeper('examples/setups.ts zookeeper')],
];

for (const [setup, skip] of cases) {
  test(`examples/setups.ts ${setup}: one holder at a time, a larger fence for the next, and it exits by itself`, { skip }, async () => {
    const r = await runTs(['examples/setups.ts', setup], 120_000);
    assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { setup: string; fences: string[]; refusedWhileHeld: boolean };
    assert.equal(out.setup, setup);
    assert.equal(out.refusedWhileHeld, true);
    assert.ok(out.fences.length >= 2);
    for (let i = 1; i < out.fences.length; i += 2)
      assert.ok(BigInt(out.fences[i]!) > BigInt(out.fences[i - 1]!), `fences ${out.fences.join(', ')}`);
  });
}

test('examples/setups.ts without a setup prints its usage and exits 2', async () => {
  const r = await runTs(['examples/setups.ts'], 60_000);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /usage: .*redis\|sentinel\|redlock\|cluster\|etcd\|zookeeper/);
});
