// Smoke test of the benchmark (bench/): `bench/run.ts --quick --out <tmp>` must complete every cell of the smoke
// run (bench/smoke.ts) and write sane results. It asserts no timings: only counts and shapes. The smoke run is a
// subset: every library adapter, every workload (W1-W5, the design's table) and every mode at least once, each
// adapter that branches on the node count on one node and on five, fencelock on etcd and ZooKeeper; asserted
// below from the results, not taken from smoke.ts on trust.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DESIGN_LIBRARIES, MODES, PROFILES, WORKLOADS } from '../../bench/config.js';
import { notApplicable, SMOKE_LIBRARIES as LIBRARIES } from '../../bench/libraries/index.js';
import { SMOKE_CELLS } from '../../bench/smoke.js';
import type { CellResult, Mode, RunReport, WorkloadId } from '../../bench/types.js';
import { REPO_ROOT } from '../support/repo.js';

const repo = REPO_ROOT;
// The quick run: 41 cells in 2 processes (its cells share one; etcd and ZooKeeper's another) plus W4's 2 workers,
// 37 s of CPU (it was 160 cells in 84 processes: 167 s idle, 224 s in a full suite run), 2026-11-26; 99 s on
// a 2-core machine loaded 12-fold by others. The limit leaves room for such a machine.
const RUN_LIMIT_MS = 300_000;
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
      // fencelock from src/: the one under test (dist/ is whatever was built last, if anything).
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

  test('runs every cell of the smoke run and writes sane results to --out only', { timeout: RUN_LIMIT_MS + 30_000 }, async () => {
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

    // Exactly the smoke run's cells, each once, each measured.
    interface Expected {
      workload: WorkloadId;
      library: string;
      mode: Mode;
      clients: number | undefined;
    }
    const expected: Expected[] = Object.entries(SMOKE_CELLS).flatMap(([library, modes]) =>
      Object.entries(modes).flatMap(([mode, workloads]) =>
        (workloads ?? []).flatMap((workload): Expected[] =>
          workload === 'design'
            ? profile.design.clients.map((clients) => ({ workload, library, mode: mode as Mode, clients }))
            : [{ workload, library, mode: mode as Mode, clients: undefined }],
        ),
      ),
    );
    assert.equal(report.cells.length, expected.length, 'one cell per planned cell, no more');
    for (const e of expected) {
      const where = `${e.workload} ${e.mode}${e.clients === undefined ? '' : ` ${e.clients} clients`} ${e.library}`;
      const cells = report.cells.filter(
        (c) => c.workload === e.workload && c.mode === e.mode && c.library === e.library && c.clients === e.clients,
      );
      assert.equal(cells.length, 1, `exactly one cell for ${where}`);
      const cell = cells[0] as CellResult;
      const lib = LIBRARIES.find((l) => l.id === e.library);
      assert.ok(lib, `${where}: a known library`);
      assert.equal(notApplicable(lib, e.workload, e.mode), undefined, `${where}: the smoke run plans only cells that apply`);
      assert.equal(cell.status, 'ok', `${where} failed: ${cell.error}`);
      checkCell(cell, where);
    }

    // What the smoke run must keep covering, from the results.
    const ok = (f: (c: CellResult) => boolean): boolean => report.cells.some((c) => c.status === 'ok' && f(c));
    for (const lib of LIBRARIES) {
      if (lib.w4Only) {
        assert.ok(
          ok((c) => c.library === lib.id && c.workload === 'W4'),
          `${lib.id}: the reference ran in its worker processes (W4)`,
        );
        continue;
      }
      assert.ok(
        ok((c) => c.library === lib.id && c.workload === 'W1'),
        `${lib.id}: its adapter ran (W1)`,
      );
      assert.ok(
        ok((c) => c.library === lib.id && c.workload === 'W3'),
        `${lib.id}: contended (W3)`,
      );
      if (lib.autoExtend)
        assert.ok(
          ok((c) => c.library === lib.id && c.workload === 'W5'),
          `${lib.id}: auto-extension (W5)`,
        );
      for (const mode of lib.nodeCountBranch ? (['single', 'redlock5'] as const) : [])
        for (const workload of ['W1', 'W3'] as const)
          assert.ok(
            ok((c) => c.library === lib.id && c.mode === mode && c.workload === workload),
            `${lib.id}: ${workload} on ${mode}`,
          );
      for (const mode of lib.consensus ? (['etcd3', 'zk3'] as const) : [])
        assert.ok(
          ok((c) => c.library === lib.id && c.mode === mode),
          `${lib.id} on ${mode}`,
        );
    }
    for (const workload of WORKLOADS)
      assert.ok(
        ok((c) => c.workload === workload),
        `${workload} ran`,
      );
    for (const mode of MODES)
      assert.ok(
        ok((c) => c.mode === mode),
        `some cell ran on ${mode}`,
      );
    for (const library of DESIGN_LIBRARIES)
      for (const clients of profile.design.clients)
        assert.ok(
          ok((c) => c.workload === 'design' && c.library === library && c.clients === clients),
          `design: ${library}, ${clients} clients`,
        );

    const page = await readFile(path.join(outDir, 'benchmarks.md'), 'utf8');
    assert.ok(page.includes('<!-- bench:begin -->') && page.includes('<!-- bench:end -->'), 'the page has its markers');
    for (const workload of WORKLOADS) assert.ok(page.includes(`### ${workload} `), `the page has a ${workload} table`);
    for (const table of ['### Targets (issue 26)', '### fencelock against the floor', "### The design's table"])
      assert.ok(page.includes(table), `the page has "${table}"`);
    assert.ok(page.includes('first pair ms (cold)'), 'the page shows the cold path beside the warm p50');
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
  if (cell.workload === 'W1') {
    const { firstPairMs, first100MeanMs, coldPairs } = cell.metrics;
    assert.ok(typeof firstPairMs === 'number' && firstPairMs > 0, `${where}: the process's first pair timed, got ${firstPairMs}`);
    assert.ok(typeof first100MeanMs === 'number' && first100MeanMs > 0, `${where}: its first pairs' mean, got ${first100MeanMs}`);
    assert.equal(coldPairs, Math.min(100, profile.warmupPairs), `${where}: the cold figure covers the warm-up`);
  }
  if (cell.workload === 'design') {
    assert.equal(cell.metrics.clients, cell.clients, `${where}: as many clients as the cell names`);
    assert.ok((cell.metrics.opsPerSec ?? 0) > 0, `${where}: ops/s > 0`);
    assert.ok((cell.metrics.meanMs ?? 0) > 0, `${where}: mean latency measured`);
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
