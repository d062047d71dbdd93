// The Java service of the Curator interop tests: test/zookeeper/curator/CuratorLock.java, compiled by `javac`
// into a temp dir against Debian's Curator jars (libcurator-recipes-java), run as a child JVM that takes an
// InterProcessMutex or InterProcessReadWriteLock on a path, and answers each stdin command with a line.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireComponent } from './optional.js';

/** Debian's Curator: its manifest's Class-Path names curator-framework, curator-client, ZooKeeper, Guava, SLF4J. */
const CURATOR_RECIPES = '/usr/share/java/curator-recipes.jar';
/** SLF4J with nothing to log to: the JVM's stdout is the test's protocol. */
const SLF4J_NOP = '/usr/share/java/slf4j-nop.jar';
const SOURCE = path.resolve('test/zookeeper/curator/CuratorLock.java');

const readable = (file: string): boolean => {
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
};

/** Whether javac and Debian's Curator jars are here. */
export function hasCurator(): boolean {
  if (!readable(CURATOR_RECIPES)) return false;
  return spawnSync('javac', ['-version'], { stdio: 'ignore' }).status === 0;
}

/** The `skip` option of a suite that needs Curator and javac. */
export const requireCurator = (what: string): false | string =>
  requireComponent(hasCurator(), what, 'libcurator-recipes-java default-jdk-headless');

/** CuratorLock.java, compiled: the classpath that runs it, and a cleanup removing the classes. */
export interface CompiledCuratorLock {
  readonly classpath: string;
  remove(): void;
}

/** Compiles CuratorLock.java into a temp dir (javac, about 2 s of CPU). Rejects with javac's output on failure. */
export function compileCuratorLock(): Promise<CompiledCuratorLock> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fencelock-curator-'));
  const classpath = [dir, CURATOR_RECIPES, ...(readable(SLF4J_NOP) ? [SLF4J_NOP] : [])].join(path.delimiter);
  return new Promise((resolve, reject) => {
    const javac = spawn('javac', ['-cp', CURATOR_RECIPES, '-d', dir, SOURCE], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    javac.stdout.on('data', (d: Buffer) => (output += d.toString()));
    javac.stderr.on('data', (d: Buffer) => (output += d.toString()));
    javac.on('error', reject);
    javac.on('exit', (code) => {
      if (code === 0) return resolve({ classpath, remove: () => rmSync(dir, { recursive: true, force: true }) });
      rmSync(dir, { recursive: true, force: true });
      reject(new Error(`javac CuratorLock.java exited with ${code}:\n${output}`));
    });
  });
}

/** One Java service holding (or waiting for) a Curator lock, driven by commands. */
export interface CuratorLockProcess {
  readonly child: ChildProcess;
  /** Sends one command line: `acquire <ms>`, `release`, `quit`. */
  send(command: string): void;
  /** The next line it prints (in order), within `timeoutMs`; rejects with everything it printed otherwise. */
  next(timeoutMs?: number): Promise<string>;
  /** `quit`, then waits for the JVM to exit (SIGKILL past 10 s). */
  stop(): Promise<void>;
}

/** Starts CuratorLock on `path` of the ensemble at `connectionString`; resolves once it printed `ready`. */
export async function startCuratorLock(
  compiled: CompiledCuratorLock,
  connectionString: string,
  zpath: string,
  kind: 'mutex' | 'read' | 'write',
): Promise<CuratorLockProcess> {
  // A small heap and the quick JIT tier: the JVM starts in about a second.
  const child = spawn(
    'java',
    ['-Xmx64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', compiled.classpath, 'CuratorLock', connectionString, zpath, kind],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let printed = '';
  let buffer = '';
  child.stdout!.on('data', (d: Buffer) => {
    printed += d.toString();
    buffer += d.toString();
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      const taker = waiting.shift();
      if (taker) taker(line);
      else lines.push(line);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (printed += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const next = (timeoutMs = 20_000): Promise<string> => {
    const ready = lines.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const taker = (line: string): void => {
        clearTimeout(timer);
        resolve(line);
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(taker), 1);
        reject(new Error(`CuratorLock printed no line within ${timeoutMs} ms; its output so far:\n${printed}`));
      }, timeoutMs);
      waiting.push(taker);
    });
  };
  const process: CuratorLockProcess = {
    child,
    send: (command) => child.stdin!.write(`${command}\n`),
    next,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end('quit\n');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
  const first = await next(30_000).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  if (first !== 'ready') {
    child.kill('SIGKILL');
    throw new Error(`CuratorLock did not start: ${first}\n${printed}`);
  }
  return process;
}
