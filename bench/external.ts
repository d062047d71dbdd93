// Workloads that are scripts of their own, run by `npm run bench` after the cells: the hook point for `burst`
// (issue 25: bench/burst.ts, thousands of callers at once, written alongside this harness), and the setup
// comparison of docs/choosing.md (bench/choosing.ts), so that `npm run bench -- <options>` reaches bench/run.ts.
//
// The contract for such a script, bench/<script>:
// - run as `node --import tsx bench/<script> [args]` from the repository root, after bench/run.ts has stopped its
//   own nodes: it starts (and stops) whatever servers and processes it needs, and runs its cells in fresh Node
//   processes as the other workloads do;
// - it writes its results to stdout as markdown (a table, notes under it): put on docs/benchmarks.md as they
//   are, under the workload's title, and kept in the run's JSON (`external`), so bench/render.ts redraws them
//   (unless `onPage` is false: choosing.ts writes docs/choosing.md itself); progress and diagnostics go to
//   stderr (shown while it runs, not kept);
// - exit code 0 when it ran (its own targets missed or not), non-zero when it could not run: the workload is
//   then reported as failed with the end of its stderr.
// A script that is not there yet is reported as n/a, with its path: the run goes on without it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { trackChild, untrackChild } from './spawn-cell.js';
import type { ExternalResult, ProfileName } from './types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ERROR_TAIL = 2_000;

export interface ExternalWorkload {
  id: string;
  title: string;
  /** under bench/ */
  script: string;
  /** its arguments in a profile; undefined: not run in that profile */
  args(profile: ProfileName): string[] | undefined;
  timeoutMs: number;
  /** its stdout goes on docs/benchmarks.md */
  onPage: boolean;
  /** it writes into docs/ itself: not run by a run that writes elsewhere (--out, a partial run) */
  writesDocs: boolean;
}

export const EXTERNAL_WORKLOADS: readonly ExternalWorkload[] = [
  {
    id: 'burst',
    title: 'Burst — thousands of callers at once, one key or distinct keys (issue 25)',
    script: 'burst.ts',
    args: (profile) => (profile === 'full' ? [] : undefined),
    timeoutMs: 20 * 60_000,
    onPage: true,
    writesDocs: false,
  },
  {
    id: 'choosing',
    title: 'Choosing a setup — five setups through one API (docs/choosing.md)',
    script: 'choosing.ts',
    args: (profile) => (profile === 'full' ? [] : undefined),
    timeoutMs: 15 * 60_000,
    onPage: false,
    writesDocs: true,
  },
];

export function externalWorkload(id: string): ExternalWorkload {
  const w = EXTERNAL_WORKLOADS.find((e) => e.id === id);
  if (!w) throw new Error(`unknown external workload ${id}`);
  return w;
}

/** `docsElsewhere`: this run writes its page elsewhere (--out, a partial run), so docs/ must stay as it is. */
export async function runExternal(w: ExternalWorkload, profile: ProfileName, docsElsewhere: boolean): Promise<ExternalResult> {
  const file = path.join(ROOT, 'bench', w.script);
  const command = `node --import tsx bench/${w.script}`;
  const base = { id: w.id, title: w.title, command };
  const args = w.args(profile);
  if (args === undefined) return { ...base, status: 'n/a', error: `not part of a ${profile} run`, wallMs: 0 };
  if (!existsSync(file)) return { ...base, status: 'n/a', error: `bench/${w.script} is not there`, wallMs: 0 };
  if (w.writesDocs && docsElsewhere)
    return { ...base, status: 'n/a', error: 'it writes into docs/, and this run writes elsewhere', wallMs: 0 };
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a timeout or Ctrl-C ends it with whatever it started
    });
    trackChild(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => {
      process.stderr.write(d);
      stderr = (stderr + d.toString('utf8')).slice(-ERROR_TAIL);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      untrackChild(child, true);
    }, w.timeoutMs);
    let finished = false;
    const finish = (error?: Error): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      untrackChild(child, true);
      const wallMs = performance.now() - started;
      const command = `${base.command}${args.length ? ` ${args.join(' ')}` : ''}`;
      if (!error && !timedOut && child.exitCode === 0)
        return resolve({ ...base, command, status: 'ok', ...(w.onPage ? { markdown: stdout.trim() } : {}), wallMs });
      const why =
        error?.message ?? (timedOut ? `timed out after ${w.timeoutMs} ms` : `exit code ${child.exitCode}, signal ${child.signalCode}`);
      resolve({ ...base, command, status: 'failed', error: `${why}\n${stderr.trim()}`.trim(), wallMs });
    };
    child.once('error', finish);
    child.once('close', () => finish());
  });
}
