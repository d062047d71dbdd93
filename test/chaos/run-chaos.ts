// The chaos command (test/chaos/main.ts) run as `npm run chaos` runs it, in a child process, for the tests that
// judge its last line: teeth.test.ts (the planted flaws are found) and rules.test.ts (none is found without them).
import { spawn } from 'node:child_process';
import { tsEntry } from '../support/entry.js';
import { REPO_ROOT } from '../support/repo.js';

const LAST_LINE = /^schedules (\d+), operations (\d+), faults (\d+), violations (\d+) \(seeds (\d+)-(\d+)\)$/m;

export interface Run {
  readonly output: string;
  readonly schedules: number;
  readonly operations: number;
  readonly faults: number;
  readonly violations: number;
}

export function chaos(args: readonly string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsEntry('test/chaos/main.ts'), ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // On a hang: SIGTERM first, so that the run stops the servers it started by their PIDs (src/testing/processes.ts
    // does on SIGTERM; a SIGKILL left them running), then SIGKILL if it has not exited after a grace.
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      hardKill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      const m = LAST_LINE.exec(output);
      if (code !== 0 || !m) return reject(new Error(`chaos ${args.join(' ')} exited ${signal ?? code}\n${output}`));
      const [schedules, operations, faults, violations] = m.slice(1, 5).map(Number) as [number, number, number, number];
      resolve({ output, schedules, operations, faults, violations });
    });
  });
}
