// Runs one cell in a fresh Node process with a time limit. The process leads its own process group, so a timeout
// or Ctrl-C kills it together with any workers it started (W4), by that group's id only.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CellMessage } from './cell.js';
import type { CellResult, CellSpec } from './types.js';

const CELL = fileURLToPath(new URL('./cell.ts', import.meta.url));
const OUTPUT_TAIL = 2_000;

let current: ChildProcess | undefined;

/** Kill the running cell's process group, if any (SIGINT/exit handlers of run.ts). */
export function killCurrentCell(): void {
  const pid = current?.pid;
  if (pid === undefined || current?.exitCode !== null || current.signalCode !== null) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export function runCell(spec: CellSpec, timeoutMs: number): Promise<CellResult> {
  const started = performance.now();
  const base = { workload: spec.workload, library: spec.library, mode: spec.mode };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', CELL, JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    current = child;
    let output = '';
    const keep = (d: Buffer): void => {
      output = (output + d.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    let message: CellMessage | undefined;
    child.on('message', (m) => (message ??= m as CellMessage));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killCurrentCell();
    }, timeoutMs);
    let finished = false;
    const finish = (spawnError?: Error): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (current === child) current = undefined;
      killGroupLeftovers(child);
      const wallMs = performance.now() - started;
      if (message?.type === 'result') return resolve({ ...base, status: 'ok', wallMs, ...message.result });
      const why = timedOut
        ? `timed out after ${timeoutMs} ms`
        : message?.type === 'error'
          ? message.error
          : (spawnError?.message ?? `cell process exited (code ${child.exitCode}, signal ${child.signalCode}) without a result`);
      const tail = output.trim().split('\n').slice(-6).join('\n');
      resolve({ ...base, status: 'failed', wallMs, error: tail && message?.type !== 'error' ? `${why}\n${tail}` : why });
    };
    child.once('error', (e) => finish(e));
    child.once('close', () => finish()); // after 'exit' and after the last IPC message and output
  });
}

/** A W4 cell that crashed may leave workers behind in its group: kill the group by its id. */
function killGroupLeftovers(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // no process left in the group
  }
}
