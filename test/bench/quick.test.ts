// Smoke test of the benchmark (bench/): `bench/run.ts --quick --out <tmp>` must complete every
// (workload, library, mode) cell and write sane results. It asserts no timings: only counts and shapes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODES, PROFILES, WORKLOADS } from '../../bench/config.js';
import { notApplicable, SMOKE_LIBRARIES as LIBRARIES } from '../../bench/libraries/index.js';
import type { CellResult, RunReport } from '../../bench/types.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// The quick run: 160 cells, each in a fresh process, 167 s on an idle 2-core machine (2026-11-26); in the suite
// it shares the 2 cores with the other test files and took over 280 s once in CI.
const RUN_LIMIT_MS = 480_000;
const profile = PROFILES.quick;

interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

let child: ChildProcess | undefined;
let outDir = '';

/** Runs the quick benchmark; ends it with SIGINT (run.ts then stops its cell and Redis nodes), then SIGKILL, at the limit. */
function runQuick(dir: string): Promise<RunOutcome> {
  return new Promise((resolve) => {
    child = spawn(process.execPath, ['--import', 'tsx', path.join('bench', 'run.ts'), '--quick', '--out', dir], {
      cwd: repo,
      // fencelock from src/: dist/ may be mid-rebuild by test/build.test.ts running alongside.
      env: { ...process.env, FENCELOCK_BENCH_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (d: Buffer): void => {
      output = (output + d.toString()).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const timer = setTimeout(() => {
      child?.kill('SIGINT');
      setTimeout(() => child?.kill('SIGKILL'), 10_000).unref();
    }, RUN_LIMIT_MS);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

const mtime = async (file: string): Promise<number | undefined> => (await stat(file).catch(() => undefined))?.mtimeMs;

describe('bench --quick', { timeout: RUN_LIMIT_MS + 60_000 }, () => {
  before(async () => {
    outDir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-bench-'));
  });

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  test('runs every workload x library x mode cell and writes sane results to --out only', { timeout: RUN_LIMIT_MS + 30_000 }, async () => {
    assert.ok(
      existsSync(path.join(repo, 'node_modules', 'redlock-v4')),
      'the compared libraries are installed (root devDependencies): run `npm ci`',
    );
    const docsPage = path.join(repo, 'docs', 'benchmarks.md');
    const docsBefore = await mtime(docsPage);

    const r = await runQuick(outDir);
    assert.equal(r.signal, null, `the run was killed (limit ${RUN_LIMIT_MS} ms)\n${r.output}`);
    assert.equal(r.code, 0, `exit code ${r.code}\n${r.output}`);
    assert.equal(await mtime(docsPage), docsBefore, 'a --out run leaves docs/benchmarks.md alone');

    const files = await readdir(outDir);
    const jsonFile = files.find((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f));
    assert.ok(jsonFile, `a <date>.json in --out, got ${files.join(', ')}`);
    const report = JSON.parse(await readFile(path.join(outDir, jsonFile), 'utf8')) as RunReport;
    assert.equal(report.profile, 'quick');
    assert.ok(report.machine.cpus > 0 && report.machine.node.startsWith('v'), 'machine recorded');
    assert.ok(/^\d+\.\d+/.test(report.machine.redis), `redis version recorded, got ${report.machine.redis}`);
    assert.ok(report.command.includes('--quick'), `the exact command is recorded, got ${report.command}`);

    for (const lib of LIBRARIES) {
      assert.ok(report.settings.libraries[lib.id], `settings recorded for ${lib.id}`);
      assert.ok(report.versions[lib.pkg], `version recorded for ${lib.pkg}`);
    }
    assert.equal(report.cells.length, WORKLOADS.length * LIBRARIES.length * MODES.length, 'one cell per workload x library x mode');

    for (const workload of WORKLOADS) {
      for (const mode of MODES) {
        for (const lib of LIBRARIES) {
          const where = `${workload} ${mode} ${lib.id}`;
          const cells = report.cells.filter((c) => c.workload === workload && c.mode === mode && c.library === lib.id);
          assert.equal(cells.length, 1, `exactly one cell for ${where}`);
          const cell = cells[0] as CellResult;
          const skip = notApplicable(lib, workload, mode);
          if (skip) {
            assert.equal(cell.status, 'n/a', `${where}: ${skip}, so n/a`);
            continue;
          }
          assert.equal(cell.status, 'ok', `${where} failed: ${cell.error}`);
          checkCell(cell, where);
        }
      }
    }

    const page = await readFile(path.join(outDir, 'benchmarks.md'), 'utf8');
    assert.ok(page.includes('<!-- bench:begin -->') && page.includes('<!-- bench:end -->'), 'the page has its markers');
    for (const workload of WORKLOADS) assert.ok(page.includes(`### ${workload} `), `the page has a ${workload} table`);
    assert.ok(page.includes('## Where the time goes'), 'the page keeps its "Where the time goes" section');
    const svg = await readFile(path.join(outDir, 'benchmarks.svg'), 'utf8');
    assert.ok(svg.startsWith('<svg') && svg.trimEnd().endsWith('</svg>'), 'the chart is an SVG document');
    for (const lib of LIBRARIES) assert.ok(svg.includes(`>${lib.id}<`), `the chart labels ${lib.id}`);
  });
});

function checkCell(cell: CellResult, where: string): void {
  assert.ok((cell.ops ?? 0) > 0, `${where}: ops > 0, got ${cell.ops}`);
  // An etcd or ZooKeeper cell sends no Redis commands: there only what the client did is measured.
  if (cell.mode !== 'etcd3' && cell.mode !== 'zk3') {
    assert.ok(cell.commands && cell.commands.total > 0, `${where}: Redis commands were counted`);
    assert.ok((cell.commands.perOp ?? 0) > 0, `${where}: commands per op > 0, got ${cell.commands.perOp}`);
    assert.ok(Object.keys(cell.commands.byCommand).length > 0, `${where}: per-command breakdown present`);
  }
  assert.ok(cell.cpu && cell.cpu.userUs + cell.cpu.systemUs >= 0 && cell.cpu.perOpUs !== null, `${where}: client CPU recorded`);
  assert.ok(cell.metrics, `${where}: metrics present`);
  if (cell.workload === 'W3' || cell.workload === 'W4') {
    const callers = cell.workload === 'W3' ? profile.w3.callers : profile.w4.processes * profile.w4.callersPerProcess;
    const fairness = cell.fairness;
    assert.ok(fairness, `${where}: fairness present`);
    assert.equal(fairness.callers, callers, `${where}: one fairness entry per caller`);
    assert.equal(fairness.perCaller.length, callers, `${where}: per-caller counts`);
    const total = fairness.perCaller.reduce((a, b) => a + b, 0);
    assert.equal(total, cell.metrics.acquisitions, `${where}: per-caller counts add up to the acquisitions`);
    assert.equal(total, cell.ops, `${where}: ops are the acquisitions`);
    for (const key of ['fairnessMaxMin', 'jain', 'waitP99Ms', 'gapP50Ms', 'acqPerSec']) {
      assert.ok(key in cell.metrics, `${where}: metric ${key} present`);
    }
    assert.ok(cell.metrics.jain !== null, `${where}: Jain index computed`);
  }
  if (cell.workload === 'W5') {
    // a hold may fail on a starved machine (a node timeout), so count them rather than demand none
    const held = cell.metrics.locksHeld ?? 0;
    assert.ok(held > 0, `${where}: locks were held, first error: ${cell.errorSample}`);
    assert.equal(held + (cell.errors ?? 0), profile.w5.locks, `${where}: every lock was either held or failed`);
    assert.ok(typeof cell.metrics.heapBytesPerLock === 'number', `${where}: heap per lock measured`);
    assert.ok(typeof cell.metrics.eventLoopDelayP99Ms === 'number', `${where}: event-loop delay measured`);
  }
}
