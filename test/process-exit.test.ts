// A process that closes its managers must be able to end by itself: no
// timer, socket or subscription of fencelock may keep the event loop alive.
// Each case runs a script from test/fixtures in a child Node process that never calls process.exit.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { tsEntry } from './support/entry.js';
import { requireEtcd, requireZooKeeper } from './support/optional.js';
import { REPO_ROOT } from './support/repo.js';

const repo = REPO_ROOT;
const EXIT_WITHIN_MS = 10_000;

interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly ms: number;
  readonly lines: Array<Record<string, unknown>>;
  readonly stderr: string;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The PIDs of the servers a fixture started (`redisPid`, or `serverPids` for several). */
const serverPids = (lines: ReadonlyArray<Record<string, unknown>>): number[] =>
  lines.flatMap((l) => [l.redisPid, ...((l.serverPids as unknown[] | undefined) ?? [])]).filter((p): p is number => typeof p === 'number');

/** Runs a fixture; if it has not exited after EXIT_WITHIN_MS, ends it (and its redis-server) and reports that. */
function runFixture(name: string, exitWithinMs = EXIT_WITHIN_MS): Promise<ChildResult & { timedOut: boolean }> {
  const started = performance.now();
  const child = spawn(process.execPath, tsEntry(`test/fixtures/${name}`), {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = (): Array<Record<string, unknown>> =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM'); // the child's fencelock/testing stops its redis-server on SIGTERM
      setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
    }, exitWithinMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // never leave a redis-server behind, even if the child was killed hard
      for (const pid of serverPids(lines())) if (alive(pid)) process.kill(pid, 'SIGKILL');
      // stdout may still hold the last line when 'exit' fires: wait for 'close'
      const finish = (): void => resolve({ code, signal, ms: performance.now() - started, lines: lines(), stderr, timedOut });
      if (child.stdout.readableEnded) finish();
      else child.stdout.once('close', finish);
    });
  });
}

function assertExitedByItself(r: ChildResult & { timedOut: boolean }): Record<string, unknown> {
  assert.equal(r.timedOut, false, `the child did not exit by itself within ${EXIT_WITHIN_MS} ms\n${r.stderr}`);
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.code, 0, `exit code ${r.code}\n${r.stderr}`);
  const result = r.lines.find((l) => l.done === true);
  assert.ok(result, `the child never reported done; stderr:\n${r.stderr}`);
  const pids = serverPids(r.lines);
  assert.ok(pids.length > 0, 'the child reported its servers');
  for (const pid of pids) assert.equal(alive(pid), false, `its server ${pid} is gone`);
  return result;
}

// Two at a time: the etcd outage's child spends ~10 s waiting out its outage (etcd3's watch backing off, which
// is what it checks), so it goes first and the other three run one after another beside it; its measured
// moment, the close, comes after theirs (each takes 1-3 s).
describe('process exit', { concurrency: 2 }, () => {
  test(
    'after an etcd outage that kept a waiter’s watch reconnecting, the process ends within a second or two of close()',
    { skip: requireEtcd('etcd (process exit)') },
    async () => {
      // Found by `npm run chaos -- --backend etcd` (seeds 500007, 500011, 500037, 520018, 520020: workers still alive 5 s
      // after closing everything, with FENCELOCK_LEAK_DEBUG naming the timer): etcd3’s watch reconnect timer (to 30 s) outlived
      // close(); the client fencelock makes backs off to 1 s at most.
      const r = await runFixture('exit-after-etcd-outage.ts', 60_000);
      const exitedAt = Date.now();
      const result = assertExitedByItself(r);
      assert.equal(result.outcome, 'CLOSED');
      const lingered = exitedAt - (result.at as number);
      assert.ok(lingered < 2_500, `the process lingered ${lingered} ms after closing everything`);
    },
  );

  test('after close(), a process with URL, ioredis and node-redis managers ends by itself', async () => {
    const result = assertExitedByItself(await runFixture('exit-after-close.ts'));
    const fences = result.fences as string[];
    assert.equal(fences.length, 3);
    assert.ok(
      fences.every((f, i) => i === 0 || BigInt(f) > BigInt(fences[i - 1]!)),
      `fences ${fences.join(', ')}`,
    );
    assert.equal(result.heldBeforeClose, 1);
    assert.equal(result.heldAfterClose, 0, 'close() releases the locks its manager still holds');
  });

  test('managers closed while waiting in acquire() reject their waiters, and the process ends by itself', async () => {
    const result = assertExitedByItself(await runFixture('exit-while-waiting.ts'));
    assert.equal(result.subscribers, 2, 'both waiters were waiting (subscribed) when closed');
    assert.deepEqual(result.outcomes, ['CLOSED', 'CLOSED']);
    assert.equal(result.stillHeld, true, "closing the waiters did not touch the holder's lock");
  });

  test(
    'after close(), a process with etcd and ZooKeeper managers (loss watches, woken and closed waiters) ends by itself',
    { skip: requireEtcd('etcd (process exit)') || requireZooKeeper('ZooKeeper (process exit)') },
    async () => {
      const result = assertExitedByItself(await runFixture('exit-after-close-consensus.ts', 60_000));
      const fences = (result.fences as string[]).map(BigInt);
      assert.equal(fences.length, 4);
      assert.ok(fences[1]! > fences[0]! && fences[3]! > fences[2]!, `fences ${fences.join(', ')}`);
      assert.deepEqual(result.outcomes, ['CLOSED', 'CLOSED'], 'a waiter of a closed manager is told');
    },
  );
});
