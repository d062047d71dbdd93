import { spawn, type ChildProcess } from 'node:child_process';
import { tsEntry } from './entry.js';
import { eventually } from './harness.js';

export { tsEntry };

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `fencelock <args>` from the sources (tsEntry), bounded by `timeoutMs` (killed past it). */
export function runCli(args: readonly string[], timeoutMs = 60_000, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runNode([...tsEntry('src/cli/main.ts'), ...args], timeoutMs, env);
}

/** Runs a TypeScript file (and its arguments) through tsx in a child Node process, output captured, bounded by `timeoutMs`. */
export function runTs(args: readonly string[], timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runNode(['--import', 'tsx', ...args], timeoutMs, env);
}

function runNode(args: readonly string[], timeoutMs: number, env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** test/fixtures/lease-holder.ts holding `resource` on the etcd or ZooKeeper cluster at `url`, and what it printed. */
export interface LeaseHolder {
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  /** stdout and stderr so far: `held <fence>`, then `lost <error>` and `write <fence>` once its lease is gone */
  output(): string;
  /** the fence it printed once it held the lock (waits up to 20 s for it) */
  fence(): Promise<bigint>;
}

export function startLeaseHolder(url: string, resource: string): LeaseHolder {
  const child = spawn(process.execPath, [...tsEntry('test/fixtures/lease-holder.ts'), url, resource], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((r) => child.on('exit', r));
  return {
    child,
    exited,
    output: () => out,
    fence: async () => {
      await eventually(() => /held \d+/.test(out), 20_000);
      return BigInt(/held (\d+)/.exec(out)![1]!);
    },
  };
}
