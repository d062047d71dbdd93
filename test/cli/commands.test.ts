import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { LockManager } from '../../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { isAlive, runCli, tsEntry } from '../support/child.js';

describe('fencelock inspect / release', () => {
  let nodes: LocalRedisNodes;
  let locks: LockManager;
  let nodeList: string;
  before(async () => {
    nodes = await startRedisNodes(3);
    nodeList = nodes.urls.join(',');
    locks = new LockManager(nodes.urls, { ttl: 30_000 });
  });
  after(async () => {
    await locks.close();
    await nodes.stop();
  });

  test('inspect --json shows the holder, its remaining lease and the fence on every node', async () => {
    const lock = await locks.acquire('cli:inspect');
    const r = await runCli(['inspect', 'cli:inspect', '--nodes', nodeList, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout) as {
      holder: string;
      fence: string;
      quorum: number;
      nodes: Array<{ node: string; owner: string; remaining: number; fence: string }>;
    };
    assert.equal(info.holder, lock.value);
    assert.equal(info.fence, lock.fence.toString());
    assert.equal(info.quorum, 2);
    assert.equal(info.nodes.length, 3);
    for (const n of info.nodes) {
      assert.equal(n.owner, lock.value);
      assert.ok(n.remaining > 20_000 && n.remaining <= 30_000, `remaining ${n.remaining}`);
    }
    await lock.release();
  });

  test('inspect prints a table, free resources included', async () => {
    const r = await runCli(['inspect', 'cli:never-locked', '--nodes', nodeList]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /not held by a quorum/);
    assert.equal((r.stdout.match(/\(free\)/g) ?? []).length, 3);
  });

  test('inspect with unreachable nodes names them and exits 1 when no quorum answered', async () => {
    const dead = 'redis://127.0.0.1:1,redis://127.0.0.1:2';
    const r = await runCli(['inspect', 'x', '--nodes', `${dead},${nodes.urls[0]}`], 30_000);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /127\.0\.0\.1:1/);
    assert.match(r.stderr, /127\.0\.0\.1:2/);
    assert.match(r.stdout, /error:/);
  });

  test('inspect shows each node’s state: a node restarted empty is quarantined until a given time', async () => {
    const before = await runCli(['inspect', 'cli:state', '--nodes', nodeList, '--json']);
    const states = (JSON.parse(before.stdout) as { nodes: Array<{ state: string }> }).nodes.map((n) => n.state);
    assert.deepEqual(states, ['trusted', 'trusted', 'trusted']);
    const other = new LockManager(nodes.urls, { ttl: 30_000 });
    try {
      await nodes.nodes[2]!.restart();
      // A round reaches the empty node (creating its new marker); the trusted nodes have recorded ttl 30 000.
      await eventually(
        async () =>
          await other
            .tryAcquire('cli:state')
            .then((l) => l?.release())
            .then(
              () => true,
              () => false,
            ),
        5_000,
        50,
      );
      const r = await runCli(['inspect', 'cli:state', '--nodes', nodeList]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /quarantined until \d{4}-\d\d-\d\dT[\d:.]+Z \(lost its data\)/);
      assert.equal((r.stdout.match(/trusted/g) ?? []).length, 2, 'the two other nodes are trusted');
    } finally {
      await other.close();
    }
  });

  test('release --force --yes deletes another owner’s lock; without --force or --yes it refuses', async () => {
    const lock = await locks.acquire('cli:release');
    const noForce = await runCli(['release', 'cli:release', '--nodes', nodeList, '--yes']);
    assert.equal(noForce.code, 2);
    assert.match(noForce.stderr, /--force/);
    const noYes = await runCli(['release', 'cli:release', '--nodes', nodeList, '--force']);
    assert.equal(noYes.code, 2);
    assert.match(noYes.stderr, /--yes/);
    assert.equal(lock.isValid(), true);

    const r = await runCli(['release', 'cli:release', '--nodes', nodeList, '--force', '--yes', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { resource: 'cli:release', released: 3, nodes: 3 });
    const admin = new Redis(nodes.urls[0]!);
    try {
      assert.equal(await admin.exists('fencelock:{cli:release}:lock'), 0);
    } finally {
      admin.disconnect();
    }
    assert.deepEqual(await lock.release(), { released: 0, nodes: 3 });
  });

  test('bad arguments exit 2 with a message', async () => {
    for (const args of [['inspect'], ['inspect', 'x'], ['inspect', 'x', '--nodes', 'not-a-url'], ['frobnicate']]) {
      const r = await runCli(args, 20_000);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.length > 0, `${args.join(' ')} printed no message`);
    }
  });
});

test('--help and --version exit 0', async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  for (const command of ['demo', 'nodes', 'inspect', 'release']) assert.match(help.stdout, new RegExp(command));
  const demoHelp = await runCli(['demo', '--help']);
  assert.equal(demoHelp.code, 0);
  assert.match(demoHelp.stdout, /--no-chaos/);
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+/);
});

test('nodes start prints working URLs and stops its nodes on Ctrl-C', async () => {
  const child = spawn(process.execPath, [...tsEntry('src/cli/main.ts'), 'nodes', 'start', '--count', '2'], {
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    await eventually(() => /--nodes \S+/.test(stdout), 20_000);
    const urls = /--nodes (\S+)/.exec(stdout)![1]!.split(',');
    const pids = [...stdout.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));
    // The README's `nodes start` line, as it says: a first line naming the nodes, and an export for the shell.
    assert.match(stdout.split('\n')[0]!, /^2 redis-server node\(s\) running/);
    await eventually(() => /export FENCELOCK_NODES=\S+/.test(stdout), 5_000);
    assert.equal(/export FENCELOCK_NODES=(\S+)/.exec(stdout)![1], urls.join(','));
    assert.equal(urls.length, 2);
    assert.equal(pids.length, 2);
    for (const url of urls) {
      const c = new Redis(url);
      try {
        assert.equal(await c.ping(), 'PONG');
      } finally {
        c.disconnect();
      }
    }
    child.kill('SIGINT');
    assert.equal(await exited, 0);
    await eventually(() => pids.every((pid) => !isAlive(pid)), 5_000);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
