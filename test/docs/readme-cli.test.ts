// The README's command line, as written: the crontab example run (its nodes and script swapped for local
// ones), every command of its synopsis block run against local Redis nodes (exit code and first output line),
// each flag it shows present in that command's --help, and every row of its exit-code table produced by the
// situation the row names and listed in `fencelock --help`. Through src/cli/main.ts, as `npm run fencelock` runs it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LockManager } from '../../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../../src/testing/index.js';
import { eventually } from '../support/harness.js';
import { runCli, type CliResult } from '../support/child.js';
import { codeBlocks } from '../support/code-blocks.js';
import { REPO_ROOT } from '../support/repo.js';

const ROOT = REPO_ROOT;
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = README.slice(README.indexOf('## Command line'), README.indexOf('## Documentation'));
const shBlocks = codeBlocks(ROOT, 'README.md').filter((b) => b.lang === 'sh' && section.includes(b.code));
const cronBlock = shBlocks.find((b) => /\S*fencelock run /.test(b.code.split('\n').find((l) => /^[\d*]/.test(l)) ?? ''))!;
const synopsis = shBlocks.find((b) => b !== cronBlock)!;
/** `fencelock <command> …` lines of the synopsis block, comments cut off. */
const synopsisLines = synopsis.code
  .split('\n')
  .filter((l) => l.startsWith('fencelock '))
  .map((l) => l.replace(/\s+#.*$/, ''));
/** The synopsis of `fencelock run`, in the text under the crontab example. */
const runSynopsis = /`(fencelock run \[[^`]+)`/.exec(section)![1]!;
/** The codes of the README's exit-code table ('126 / 127' gives both). */
const tableCodes = [...section.matchAll(/^\| ([\d /]+) \| /gm)].flatMap((m) => m[1]!.split('/').map((c) => Number(c.trim())));

/** Held until released, however long the CLI takes to start on a loaded machine. */
const HELD = { autoExtend: true } as const;
const firstLine = (r: CliResult): string => r.stdout.split('\n')[0] ?? '';
const show = (r: CliResult): string => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

test('README CLI: fencelock --help exits 0, lists every command, the exit codes of the table and every FENCELOCK_ variable', async () => {
  const r = await runCli(['--help']);
  assert.equal(r.code, 0, show(r));
  assert.equal(firstLine(r), 'Usage: fencelock [options] [command]');
  for (const line of synopsisLines) assert.match(r.stdout, new RegExp(`^  ${line.split(' ')[1]}\\b`, 'm'), `--help lists ${line}`);
  const helpCodes = [...r.stdout.slice(r.stdout.indexOf('Exit codes')).matchAll(/^ {2}(\d+) /gm)].map((m) => Number(m[1]));
  assert.deepEqual(helpCodes, tableCodes, 'the exit codes of --help are the README table');
  const environment = r.stdout.slice(r.stdout.indexOf('Environment'));
  for (const name of ['FENCELOCK_NODES', 'FENCELOCK_ETCD', 'FENCELOCK_ZK', 'FENCELOCK_PREFIX']) assert.match(environment, new RegExp(name));
  // every variable the README's Command line section names is one --help names
  for (const [name] of section.matchAll(/\bFENCELOCK_[A-Z]+\b/g))
    if (!['FENCELOCK_RESOURCE', 'FENCELOCK_FENCE', 'FENCELOCK_TOKEN'].includes(name)) assert.match(environment, new RegExp(name));
});

test('README CLI: every flag of the synopsis is in its command’s --help, with the README’s defaults', async () => {
  let defaults = 0;
  for (const line of [...synopsisLines, runSynopsis]) {
    const words = line.split(' ');
    const command = words[1] === 'nodes' ? ['nodes', 'start'] : [words[1]!];
    const r = await runCli([...command, '--help']);
    assert.equal(r.code, 0, show(r));
    assert.match(firstLine(r), new RegExp(`^Usage: fencelock ${command.join(' ')} `));
    for (const [flag] of line.matchAll(/--[a-z-]+/g))
      assert.ok(r.stdout.includes(flag), `fencelock ${command.join(' ')} --help lists ${flag}`);
    // `[--flag value]` in the synopsis is the default: the help says the same (each option's text, unwrapped)
    const options = r.stdout.split(/\n(?= +-)/).map((o) => o.trim().replace(/\s+/g, ' '));
    for (const [, flag, value] of line.matchAll(/\[(--[a-z-]+) (\d+)[\] ]/g)) {
      const help = options.find((o) => o.startsWith(`${flag} `));
      assert.ok(help?.includes(`(default: ${value})`), `${flag} defaults to ${value}: ${help}`);
      defaults++;
    }
  }
  assert.ok(defaults >= 10, `${defaults} defaults compared`);
  const nodesHelp = await runCli(['nodes', 'start', '--help']);
  assert.match(nodesHelp.stdout, /--port <port>.*default: free ports/);
  assert.match(
    synopsisLines.find((l) => l.startsWith('fencelock nodes start'))!,
    /\[--port P\]/,
  );
});

describe('README CLI against local Redis nodes', () => {
  let nodes: LocalRedisNodes;
  let locks: LockManager;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    nodes = await startRedisNodes(3);
    locks = new LockManager(nodes.urls, { ttl: 30_000 });
    env = { FENCELOCK_NODES: nodes.urls.join(',') };
  });
  after(async () => {
    await locks.close();
    await nodes.stop();
  });

  test('the crontab example: a NAME=value line and an absolute path; the job runs, and a second machine exits 75 at once', async () => {
    const lines = cronBlock.code.split('\n').filter((l) => l.length > 0 && !l.startsWith('#'));
    const assignment = lines.find((l) => /^[A-Z_]+=/.test(l))!;
    assert.match(assignment, /^FENCELOCK_NODES=redis:\/\/\S+$/, 'crontab syntax: NAME=value, no export');
    const job = lines.find((l) => /^[\d*]/.test(l))!;
    const [, binary, args] = /^(?:\S+\s+){5}(\S+) (.*) -- \S+$/.exec(job)!;
    assert.match(binary!, /^\/.*\/node_modules\/\.bin\/fencelock$/, 'fencelock by its absolute path');
    // The job: the README's arguments, with a command that shows the lock it got.
    const argv = [...args!.split(' '), '--', process.execPath, '-e', 'console.log("report under fence " + process.env.FENCELOCK_FENCE)'];
    const r = await runCli(argv, 60_000, env);
    assert.equal(r.code, 0, show(r));
    assert.match(firstLine(r), /^report under fence \d+$/);
    const held = await locks.acquire(args!.split(' ').pop()!, HELD);
    try {
      const other = await runCli(argv, 60_000, env);
      assert.equal(other.code, 75, show(other));
      assert.equal(other.stdout, '', 'the job did not run');
    } finally {
      await held.release();
    }
  });

  test('inspect, watch and release --force as the synopsis shows them', async () => {
    const lock = await locks.acquire('readme:cli', HELD);
    try {
      const inspect = await runCli(['inspect', 'readme:cli', '--json'], 60_000, env);
      assert.equal(inspect.code, 0, show(inspect));
      assert.equal(firstLine(inspect), '{', 'JSON, pretty-printed');
      const info = JSON.parse(inspect.stdout) as { holder: string; nodes: Array<{ state: string; waiters: number }> };
      assert.equal(info.holder, lock.value);
      assert.deepEqual(
        info.nodes.map((n) => n.state),
        ['trusted', 'trusted', 'trusted'],
      );
      const table = await runCli(['inspect', 'readme:cli'], 60_000, env);
      assert.equal(table.code, 0, show(table));
      assert.match(firstLine(table), /readme:cli/);
      assert.match(table.stdout, /node\s+holder\s+remaining\s+waiters\s+fence\s+node state/);
      const watch = await runCli(['watch', 'readme:cli', '--count', '1'], 60_000, env);
      assert.equal(watch.code, 0, show(watch));
      assert.match(firstLine(watch), /^fencelock watch /);
      const release = await runCli(['release', 'readme:cli', '--force', '--yes', '--json'], 60_000, env);
      assert.equal(release.code, 0, show(release));
      assert.deepEqual(JSON.parse(release.stdout), { resource: 'readme:cli', released: 3, nodes: 3 });
    } finally {
      await lock.release();
    }
  });

  test('every exit code of the README table, from the situation its row names', async () => {
    const seen = new Map<number, string>();
    const expect = async (code: number, args: string[], why: string, extraEnv = env): Promise<CliResult> => {
      const r = await runCli(args, 60_000, extraEnv);
      assert.equal(r.code, code, `${why}: ${show(r)}`);
      seen.set(code, why);
      return r;
    };
    const node = process.execPath;
    await expect(0, ['run', 'readme:codes', '--', node, '-e', ''], 'done');
    const killed = await runCli(['run', 'readme:codes', '--', node, '-e', 'process.kill(process.pid, "SIGTERM")'], 60_000, env);
    assert.equal(killed.code, 128 + 15, `128 + N when signal N ended it: ${show(killed)}`);
    const dead = 'redis://127.0.0.1:1,redis://127.0.0.1:2';
    await expect(1, ['inspect', 'readme:codes', '--nodes', `${dead},${nodes.urls[0]}`], 'an operation failed');
    await expect(2, ['run', 'readme:codes', '--', 'true'], 'bad usage: no nodes', { FENCELOCK_NODES: '' });
    await expect(69, ['run', '--timeout', '2000', '--nodes', `${dead},redis://127.0.0.1:3`, 'readme:codes', '--', 'true'], 'no quorum');
    const held = await locks.acquire('readme:codes', HELD);
    try {
      await expect(75, ['run', '--no-wait', 'readme:codes', '--', 'true'], 'held by another owner');
    } finally {
      await held.release();
    }
    await expect(126, ['run', 'readme:codes', '--', join(ROOT, 'README.md')], 'cannot be started (not executable)');
    await expect(127, ['run', 'readme:codes', '--', 'no-such-command-fencelock'], 'not found');
    // 76: the lock is lost while the command runs (an admin deletes it; the next extension finds it gone)
    const running = runCli(
      ['run', '--ttl', '900', '--grace', '1000', 'readme:lost', '--', node, '-e', 'setTimeout(() => {}, 30000)'],
      60_000,
      env,
    );
    // Held on every node, not only a quorum: under load one node's SET can land after the quorum's (seen in a
    // full suite run, forceRelease then found 2), and the count below is of the nodes that had it.
    await eventually(async () => (await locks.inspect('readme:lost')).nodes.every((n) => n.owner !== null), 30_000, 50);
    assert.equal(await locks.forceRelease('readme:lost'), 3);
    const lost = await running;
    assert.equal(lost.code, 76, show(lost));
    seen.set(76, 'lost');
    assert.deepEqual(
      [...seen.keys()].sort((a, b) => a - b),
      [...tableCodes].sort((a, b) => a - b),
      'every row of the table was produced',
    );
  });
});
