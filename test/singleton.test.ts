// scheduleSingleton against real Redis: a job on a schedule in several managers (as several processes would
// run it) never runs twice at once; the others skip their tick.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InvalidArgumentError, LockManager, scheduleSingleton } from '../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../src/testing/index.js';
import { delay, eventually } from './support/harness.js';

describe('scheduleSingleton', () => {
  let nodes: LocalRedisNodes;
  const managers: LockManager[] = [];
  const manager = (): LockManager => {
    const m = new LockManager(nodes.urls, { ttl: 2_000 });
    managers.push(m);
    return m;
  };
  before(async () => {
    nodes = await startRedisNodes(3);
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    await nodes.stop();
  });

  test('three schedulers on one job: its runs never overlap, and the ticks that found it running are skipped', async () => {
    const runs: Array<{ start: number; end: number; fence: bigint }> = [];
    const job = async (lock: { fence: bigint }): Promise<void> => {
      const start = performance.now();
      await delay(15);
      runs.push({ start, end: performance.now(), fence: lock.fence });
    };
    const jobs = [manager(), manager(), manager()].map((m) => scheduleSingleton(m, 'job:nightly', job, { every: 5 }));
    await eventually(() => runs.length >= 12 && jobs.reduce((n, j) => n + j.skipped, 0) >= 3, 15_000);
    await Promise.all(jobs.map((j) => j.stop()));
    const ordered = [...runs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < ordered.length; i++) assert.ok(ordered[i]!.start >= ordered[i - 1]!.end, `run ${i} overlaps the one before`);
    for (let i = 1; i < ordered.length; i++) assert.ok(ordered[i]!.fence > ordered[i - 1]!.fence, 'each run holds a newer fence');
    assert.equal(
      jobs.reduce((n, j) => n + j.ran, 0),
      runs.length,
    );
    assert.equal(
      jobs.reduce((n, j) => n + j.failed, 0),
      0,
    );
  });

  test('runNow: skipped while another scheduler holds the job; a job that throws is counted and given to onError', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const first = scheduleSingleton(
      manager(),
      'job:report',
      async () => {
        started();
        await held;
      },
      { every: 60_000 },
    );
    await running;
    const errors: unknown[] = [];
    const second = scheduleSingleton(
      manager(),
      'job:report',
      async () => {
        throw new Error('report failed');
      },
      { every: 60_000, immediately: false, onError: (e) => errors.push(e) },
    );
    assert.equal(await second.runNow(), 'skipped');
    release();
    await first.stop();
    assert.equal(first.ran, 1);
    assert.equal(await second.runNow(), 'failed');
    assert.equal(second.failed, 1);
    assert.match(String(errors[0]), /report failed/);
    await second.stop();
  });

  test('stop() waits for a running tick, and no tick starts after it', async () => {
    let ticks = 0;
    const job = scheduleSingleton(
      manager(),
      'job:stop',
      async () => {
        ticks++;
        await delay(30);
      },
      { every: 1 },
    );
    await eventually(() => ticks >= 2, 5_000);
    await job.stop();
    const after = ticks;
    await delay(50);
    assert.equal(ticks, after);
    assert.equal(job.ran, after);
  });

  test('bad input is InvalidArgumentError at once', () => {
    const m = manager();
    assert.throws(() => scheduleSingleton(m, 'j', async () => undefined, { every: 0 }), InvalidArgumentError);
    assert.throws(() => scheduleSingleton(m, 'j', async () => undefined, { every: 1.5 }), InvalidArgumentError);
    assert.throws(() => scheduleSingleton(m, 'j', 'not a function' as never, { every: 10 }), InvalidArgumentError);
  });
});
