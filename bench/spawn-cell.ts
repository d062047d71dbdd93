// Runs cells in a fresh Node process (cell.ts) with a time limit: one cell per process in a full run, a
// library's cells one after another in a --quick run (plan.ts). The process leads its own process group, so a
// timeout or Ctrl-C kills it together with any workers it started (W4), by that group's id only.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CellMessage } from './cell.js';
import type { CellResult, CellSpec } from './types.js';

const CELL = fileURLToPath(new URL('./cell.ts', import.meta.url));
const OUTPUT_TAIL = 2_000;

const running = new Set<ChildProcess>();

/** A child that leads its own process group, killed with its group by killRunning() (Ctrl-C, exit). */
export function trackChild(child: ChildProcess): void {
  running.add(child);
}

/** Forget a tracked child; `kill`: kill its group first (it may have left workers behind, or not be done). */
export function untrackChild(child: ChildProcess, kill: boolean): void {
  running.delete(child);
  if (kill) killGroup(child);
}

/** Kill every running cell's (or external workload's) process group (SIGINT/exit handlers of run.ts). */
export function killRunning(): void {
  for (const child of running) killGroup(child);
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // no process left in the group
  }
}

/**
 * Runs `specs` in one process, in order; resolves one result per spec. A cell's wall time runs from the end of
 * the one before it (the first: from the spawn), so a cell alone in its process is timed spawn to result.
 */
export function runCells(specs: readonly CellSpec[], timeoutMs: number): Promise<CellResult[]> {
  let mark = performance.now();
  const results: Array<CellResult | undefined> = specs.map(() => undefined);
  const base = (i: number) => {
    const { workload, library, mode, clients } = specs[i] as CellSpec;
    return { workload, library, mode, ...(clients === undefined ? {} : { clients }) };
  };
  return new Promise((resolve) => {
    // BENCH_CELL_PROF=<dir>: each cell process writes a V8 CPU profile there (bench/profile-summary.ts reads it).
    const prof = process.env.BENCH_CELL_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CELL_PROF}`] : [];
    const child = spawn(process.execPath, [...prof, '--expose-gc', '--import', 'tsx', CELL, JSON.stringify(specs)], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    trackChild(child);
    let output = '';
    const keep = (d: Buffer): void => {
      output = (output + d.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (raw) => {
      const m = raw as CellMessage;
      if (results[m.index] !== undefined) return;
      const at = performance.now();
      const wallMs = at - mark;
      mark = at;
      results[m.index] =
        m.type === 'result'
          ? { ...base(m.index), status: 'ok', wallMs, ...m.result }
          : { ...base(m.index), status: 'failed', wallMs, error: m.error };
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    let finished = false;
    const finish = (spawnError?: Error): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      // a crashed W4 cell may have left workers behind in the group
      untrackChild(child, true);
      const why = timedOut
        ? `timed out after ${timeoutMs} ms`
        : (spawnError?.message ?? `cell process exited (code ${child.exitCode}, signal ${child.signalCode}) without a result`);
      const tail = output.trim().split('\n').slice(-6).join('\n');
      const missing = (i: number): CellResult => ({
        ...base(i),
        status: 'failed',
        wallMs: i === results.findIndex((r) => r === undefined) ? performance.now() - mark : 0,
        error: tail ? `${why}\n${tail}` : why,
      });
      resolve(results.map((r, i) => r ?? missing(i)));
    };
    child.once('error', (e) => finish(e));
    child.once('close', () => finish()); // after 'exit' and after the last IPC message and output
  });
}
