// `fencelock run`, a distributed flock(1), and `fencelock watch`, with real processes and real nodes.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LockManager } from '../../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { isAlive, runCli, tsEntry } from '../support/child.js';

/** A `fencelock` process from the sources, with its output collected as it comes. */
interface Running {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startCli(args: readonly string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [...tsEntry('src/cli/main.ts'), ...args], {
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const running: Running = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout!.on('data', (d: Buffer) => (running.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (running.stderr += d.toString()));
  return running;
}

/** Resolves with `p` or rejects after `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
  ]);
}

describe('fencelock run', () => {
  let nodes: LocalRedisNodes;
  let locks: LockManager;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  const started: Running[] = [];
  const cli = (args: readonly string[]): Running => {
    const r = startCli(args, env);
    started.push(r);
    return r;
  };
  before(async () => {
    nodes = await startRedisNodes(3);
    env = { FENCELOCK_NODES: nodes.urls.join(',') };
    locks = new LockManager(nodes.urls, { ttl: 2_000 });
    dir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-run-'));
  });
  after(async () => {
    for (const r of started) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await locks.close();
    await nodes.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the command runs with the lock held and its fence in the environment; fencelock exits with its code', async () => {
    const r = await runCli(
      ['run', 'cli:env', '--', 'sh', '-c', 'echo "$FENCELOCK_RESOURCE $FENCELOCK_FENCE $FENCELOCK_TOKEN"; exit 3'],
      30_000,
      env,
    );
    assert.equal(r.code, 3, r.stderr);
    const [resource, fence, token] = r.stdout.trim().split(' ');
    assert.equal(resource, 'cli:env');
    assert.match(fence ?? '', /^\d+$/);
    assert.ok((token ?? '').length >= 22, 'the owner token');
    assert.equal((await locks.inspect('cli:env')).holder, null, 'released after the command exited');
  });

  test('two runs of one resource never overlap (times written by the commands themselves)', async () => {
    const log = path.join(dir, 'overlap.log');
    const job = `echo "start $(date +%s%N)" >> ${log}; sleep 0.3; echo "end $(date +%s%N)" >> ${log}`;
    const runs = [0, 1, 2].map(() => cli(['run', '--timeout', '20000', 'cli:overlap', '--', 'sh', '-c', job]));
    const exits = await within(Promise.all(runs.map((r) => r.exited)), 30_000, 'three runs');
    assert.deepEqual(
      exits.map((e) => e.code),
      [0, 0, 0],
      runs.map((r) => r.stderr).join('\n'),
    );
    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    assert.equal(lines.length, 6);
    const intervals = [];
    for (let i = 0; i < lines.length; i += 2) {
      const [s, e] = [lines[i]!, lines[i + 1]!];
      assert.match(s, /^start /, `a start follows an end: ${lines.join(' | ')}`);
      assert.match(e, /^end /, `nothing starts before the previous end: ${lines.join(' | ')}`);
      intervals.push([BigInt(s.split(' ')[1]!), BigInt(e.split(' ')[1]!)] as const);
    }
    for (let i = 1; i < intervals.length; i++)
      assert.ok(intervals[i]![0] >= intervals[i - 1]![1], 'the next run starts after the last ended');
  });

  test('--no-wait exits 75 (EX_TEMPFAIL) at once while another owner holds the lock', async () => {
    const held = await locks.acquire('cli:busy', { ttl: 30_000 }); // outlives the CLI's start-up on a loaded machine
    try {
      const t = performance.now();
      const r = await runCli(['run', '--no-wait', '--json', 'cli:busy', '--', 'true'], 30_000, env);
      assert.equal(r.code, 75, r.stderr);
      assert.match(r.stderr, /"event":"not-acquired".*"code":"ACQUIRE_TIMEOUT"/);
      assert.ok(performance.now() - t < 10_000);
    } finally {
      await held.release();
    }
  });

  test('a lost lock terminates the command at once (SIGTERM), says so, and exits 76', async () => {
    const script = 'trap "echo got-term; exit 0" TERM; echo trapped; sleep 30 & wait';
    const r = cli(['run', '--json', '--ttl', '900', '--grace', '2000', 'cli:lost', '--', 'sh', '-c', script]);
    await eventually(() => r.stderr.includes('"event":"acquired"') && r.stdout.includes('trapped'), 15_000, 20);
    assert.equal(await locks.forceRelease('cli:lost'), 3, 'an admin deletes the lock under it');
    const { code } = await within(r.exited, 10_000, 'exit after the loss');
    assert.equal(code, 76, r.stderr);
    assert.match(r.stdout, /got-term/, 'the command got SIGTERM');
    assert.match(r.stderr, /"event":"exit".*"lost":true/);
  });

  test('SIGINT and SIGTERM are forwarded to the command, and the lock is released afterwards', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const script = `trap "echo got-${signal}; exit 7" ${signal.slice(3)}; echo trapped; sleep 30 & wait`;
      const r = cli(['run', '--json', `cli:signal-${signal}`, '--', 'sh', '-c', script]);
      // "acquired" is printed before the command starts: wait for its trap, or the signal may come first
      await eventually(() => r.stderr.includes('"event":"acquired"') && r.stdout.includes('trapped'), 15_000, 20);
      r.child.kill(signal);
      const { code } = await within(r.exited, 10_000, `exit after ${signal}`);
      assert.equal(code, 7, r.stderr);
      assert.match(r.stdout, new RegExp(`got-${signal}`));
      assert.equal((await locks.inspect(`cli:signal-${signal}`)).holder, null, 'released');
    }
  });

  test('a crash of fencelock itself (SIGKILL) leaves a lock that expires by its ttl', async () => {
    const pidFile = path.join(dir, 'orphan.pid');
    const r = cli(['run', '--json', '--ttl', '1000', 'cli:crash', '--', 'sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`]);
    await eventually(() => r.stderr.includes('"event":"acquired"'), 15_000, 20);
    await eventually(async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim() !== '', 5_000, 20);
    const orphan = Number((await readFile(pidFile, 'utf8')).trim());
    try {
      r.child.kill('SIGKILL');
      await r.exited;
      const killedAt = performance.now();
      assert.notEqual((await locks.inspect('cli:crash')).holder, null, 'still held right after the crash');
      await eventually(async () => (await locks.inspect('cli:crash')).holder === null, 3_000, 20);
      assert.ok(performance.now() - killedAt < 1_000 + 500, 'gone within its ttl');
    } finally {
      if (isAlive(orphan)) process.kill(orphan, 'SIGKILL');
    }
  });

  test('bad usage exits 2 before any network call; a missing command is 127', async () => {
    const dead = { FENCELOCK_NODES: 'redis://127.0.0.1:1' };
    for (const args of [
      ['run', 'x'],
      ['run', '--ttl', '0', 'x', '--', 'true'],
      ['run', '--ttl', '100', 'x', '--', 'true'], // not more than 3 x nodeTimeout
      ['run', '--nodes', 'not-a-url', 'x', '--', 'true'],
    ]) {
      const r = await runCli(args, 30_000, dead);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
    const noNodes = await runCli(['run', 'x', '--', 'true'], 30_000, { FENCELOCK_NODES: '' });
    assert.equal(noNodes.code, 2);
    assert.match(noNodes.stderr, /FENCELOCK_NODES/);
    const missing = await runCli(['run', 'cli:missing', '--', '/no/such/command'], 30_000, env);
    assert.equal(missing.code, 127, missing.stderr);
  });

  test('watch shows holder, fence and waiters; --json gives one line per refresh; --count bounds it', async () => {
    // Held for as long as two CLI runs may take on a loaded machine (each starts a Node process), not the suite's 2 s.
    const held = await locks.acquire('cli:watched', { ttl: 30_000 });
    try {
      const r = await runCli(['watch', 'cli:watched', 'cli:free', '--interval', '100', '--count', '2', '--json'], 30_000, env);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.equal(lines.length, 2, 'two refreshes');
      const first = JSON.parse(lines[0]!) as { resources: Array<{ resource: string; holder: string | null; fence: string }> };
      assert.equal(first.resources[0]!.holder, held.value);
      assert.equal(first.resources[0]!.fence, held.fence.toString());
      assert.equal(first.resources[1]!.holder, null);
      const table = await runCli(['watch', 'cli:watched', '--count', '1'], 30_000, env);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /cli:watched\s+\S+\s+\d+ ms\s+\d+\s+0\s+3\/3 up \(quorum 2\)/);
    } finally {
      await held.release();
    }
  });
});
