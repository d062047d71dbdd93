// `fencelock run <resource> -- <command> [args…]`: a distributed flock(1) for scripts and cron jobs.
// Acquires the lock, runs the command with the lock held and auto-extended, releases it when the command
// exits, and exits with the command's own code. If the lock is lost meanwhile, the command is told at once
// (SIGTERM, then SIGKILL after --grace) and fencelock exits with LOCK_LOST.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { LockError, type Lock } from '../index.js';
import { manager } from './commands.js';
import { EXIT } from './exit-codes.js';
import { toJsonLine } from './output.js';

export interface RunOptions {
  readonly nodes: readonly string[];
  readonly prefix?: string;
  readonly ttl: number;
  /** ms to wait for the lock; 0 = one attempt (--no-wait) */
  readonly timeout: number;
  /** ms between SIGTERM and SIGKILL when the lock is lost */
  readonly grace: number;
  readonly json: boolean;
}

/** Signals fencelock passes on to the command (and then releases the lock once the command has exited). */
const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export async function run(resource: string, command: readonly string[], o: RunOptions): Promise<number> {
  const status = (event: string, fields: Record<string, unknown> = {}): void => {
    if (o.json) process.stderr.write(toJsonLine({ event, resource, ...fields }) + '\n');
  };
  const say = (text: string): void => {
    if (!o.json) process.stderr.write(`fencelock: ${text}\n`);
  };
  const locks = manager(o.nodes, o.prefix || undefined, { ttl: o.ttl });
  // From the start: a signal while waiting ends the wait (exit 128 + N); while the command runs, it is forwarded.
  const signals = new Signals();
  try {
    const started = performance.now();
    let lock: Lock;
    try {
      lock = await locks.acquire(resource, { timeout: o.timeout, autoExtend: true, signal: signals.waiting });
    } catch (error) {
      if (signals.received) {
        status('not-acquired', { code: 'SIGNAL', signal: signals.received, exit: signals.exitCode });
        return signals.exitCode;
      }
      const code = notAcquired(error);
      status('not-acquired', { code: (error as LockError).code ?? 'ERROR', exit: code, error: (error as Error).message });
      say(`${resource}: not acquired: ${(error as Error).message}`);
      return code;
    }
    status('acquired', { fence: lock.fence, token: lock.value, waited: Math.round(performance.now() - started) });
    const outcome = await supervise(lock, resource, command, o, say, signals);
    const released = await lock.release();
    status('exit', { ...outcome, released: released.released, nodes: released.nodes });
    return outcome.exit;
  } finally {
    signals.stop();
    await locks.close();
  }
}

/** Signals fencelock receives: they end the wait for the lock, then go to the command once it runs. */
class Signals {
  private readonly abort = new AbortController();
  private child: ChildProcess | undefined;
  received: NodeJS.Signals | undefined;
  private readonly handler = (signal: NodeJS.Signals): void => {
    this.received ??= signal;
    if (this.child) this.child.kill(signal);
    else this.abort.abort(new Error(`received ${signal}`));
  };

  constructor() {
    for (const s of FORWARDED) process.on(s, this.handler);
  }

  get waiting(): AbortSignal {
    return this.abort.signal;
  }

  get exitCode(): number {
    return 128 + (this.received ? (constants.signals[this.received] ?? 0) : 0);
  }

  forwardTo(child: ChildProcess): void {
    this.child = child;
  }

  stop(): void {
    for (const s of FORWARDED) process.off(s, this.handler);
  }
}

/** The exit code for a lock that could not be had: held until the timeout, or nodes that cannot make a quorum. */
function notAcquired(error: unknown): number {
  if (error instanceof LockError && error.code === 'ACQUIRE_TIMEOUT') return EXIT.NOT_ACQUIRED;
  if (error instanceof LockError && error.code === 'NO_QUORUM') return EXIT.UNAVAILABLE;
  if (error instanceof LockError && error.code === 'INVALID_ARGUMENT') return EXIT.USAGE;
  return EXIT.FAILURE;
}

interface Outcome {
  /** the command's exit code, or null when a signal ended it */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** the lock was lost while the command ran */
  readonly lost: boolean;
  /** what fencelock exits with */
  readonly exit: number;
}

/** Runs the command while the lock is held; resolves once it has exited. */
function supervise(
  lock: Lock,
  resource: string,
  command: readonly string[],
  o: RunOptions,
  say: (t: string) => void,
  signals: Signals,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    // `run <resource> -- <command>`: the `--` itself is not part of the command.
    const [file, ...args] = (command[0] === '--' ? command.slice(1) : command) as [string, ...string[]];
    const env = { ...process.env, FENCELOCK_RESOURCE: resource, FENCELOCK_FENCE: lock.fence.toString(), FENCELOCK_TOKEN: lock.value };
    let child: ChildProcess;
    let lost = false;
    let killTimer: NodeJS.Timeout | undefined;
    const cleanup = (): void => {
      clearTimeout(killTimer);
      lock.signal.removeEventListener('abort', onLost);
    };
    const onLost = (): void => {
      if (!lock.lostError) return; // released, not lost
      lost = true;
      say(`${resource}: lock lost while the command ran (${lock.lostError.message}); sending SIGTERM, SIGKILL after ${o.grace} ms`);
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), o.grace);
      killTimer.unref();
    };
    // A signal between the grant and here: do not start the command at all.
    if (signals.received) return resolve({ code: null, signal: signals.received, lost: false, exit: signals.exitCode });
    try {
      child = spawn(file, args, { stdio: 'inherit', env });
    } catch (error) {
      say(`cannot run ${file}: ${(error as Error).message}`);
      return resolve({ code: null, signal: null, lost: false, exit: EXIT.CANNOT_RUN });
    }
    let done = false;
    const finish = (outcome: Outcome): void => {
      if (done) return;
      done = true;
      cleanup();
      resolve(outcome);
    };
    signals.forwardTo(child);
    lock.signal.addEventListener('abort', onLost, { once: true });
    if (lock.signal.aborted) onLost();
    child.once('error', (error: NodeJS.ErrnoException) => {
      say(`cannot run ${file}: ${error.message}`);
      finish({ code: null, signal: null, lost, exit: error.code === 'ENOENT' ? EXIT.NOT_FOUND : EXIT.CANNOT_RUN });
    });
    child.once('exit', (code, signal) => {
      const own = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
      finish({ code, signal, lost, exit: lost ? EXIT.LOCK_LOST : own });
    });
  });
}
