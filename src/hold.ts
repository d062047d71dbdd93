// From a grant won on the nodes to a Lock the caller holds: one path for the mutex and every primitive.
// A backend (redis/, etcd/) wins grants; this layer turns them into held locks the manager tracks, so no
// backend needs to know what a Lock is.
import type { Backend, WaitResult, Win } from './backend.js';
import { InvalidArgumentError, LockError } from './errors.js';
import { Lock, runWhileHeld, type LockHost } from './lock.js';
import type { PackageCheck } from './optional-package.js';
import {
  resolveAcquireOptions,
  resolveTryAcquireOptions,
  resolveWithLockOptions,
  type AcquireOptions,
  type ResolvedAcquire,
  type ResolvedManagerOptions,
  type WithLockOptions,
} from './options.js';

/** What turning a grant into a held lock needs from the manager. */
export interface HoldHost {
  readonly lockHost: LockHost;
  /** the manager's options: the defaults of every call */
  readonly options: ResolvedManagerOptions;
  /** aborts (reason: ManagerClosedError) when the manager closes */
  readonly closing: AbortSignal;
  /** the client library the manager's URLs need: a missing one fails the call before it starts */
  readonly packages: PackageCheck;
  /** the manager now holds this lock: close() releases it (and watches its validity if anyone would see its loss) */
  track(lock: Lock): void;
}

/** What the semaphore and the read-write lock need from their manager. Built once per manager. */
export interface PrimitiveHost extends HoldHost {
  readonly backend: Backend;
}

/**
 * Waits for a grant with `win` (given the call's signal: the caller's, or the manager closing) and holds it:
 * a Lock, auto-extended if asked, tracked by the manager, announced with 'acquired'. A grant won while the
 * manager closed is released at once. Not an async function: the uncontended acquire passes here with one
 * promise reaction, no suspended frame.
 */
export function holdGrant(host: HoldHost, o: ResolvedAcquire, win: (signal: AbortSignal) => Promise<WaitResult>): Promise<Lock> {
  if (host.closing.aborted) return Promise.reject(host.closing.reason);
  const packages = host.packages.wait();
  if (packages) return packages.then(() => holdGrant(host, o, win));
  const signal = o.signal ? AbortSignal.any([o.signal, host.closing]) : host.closing;
  if (signal.aborted) return Promise.reject(signal.reason);
  let won: Promise<WaitResult>;
  try {
    won = win(signal);
  } catch (error) {
    return Promise.reject(error);
  }
  return won.then((result) => hold(host, o, result));
}

/** The grant won: the caller's lock from now on (or released at once, if the manager closed meanwhile). */
function hold(host: HoldHost, o: ResolvedAcquire, { grant, attempts, waited, provisional }: WaitResult): Lock | Promise<never> {
  const lock = new Lock(host.lockHost, grant);
  if (host.closing.aborted) return lock.release().then(() => Promise.reject(host.closing.reason));
  if (provisional) lock.topUp();
  if (o.autoExtend) lock.keepAlive(o.maxHold);
  host.track(lock);
  if (host.lockHost.observed('acquired'))
    host.lockHost.emit('acquired', { resources: grant.resources, fence: grant.fence, value: grant.token, attempts, waited });
  return lock;
}

/** One primitive's acquire call, held. */
function holdPrimitive(host: HoldHost, win: Win, o: ResolvedAcquire): Promise<Lock> {
  return holdGrant(host, o, (signal) => win(o, signal, (info) => host.lockHost.emit('retry', info)));
}

/** acquire() of a primitive: rounds until one succeeds, waiting between them for a release notification or the backoff. */
export function acquireHold(host: HoldHost, win: Win, opts: AcquireOptions | undefined): Promise<Lock> {
  return holdPrimitive(host, win, resolveAcquireOptions(opts, host.options));
}

/** tryAcquire() of a primitive: one round; null when held, QuorumError when nodes failed. */
export async function tryHold(host: HoldHost, win: Win, opts: unknown): Promise<Lock | null> {
  const o = resolveTryAcquireOptions(opts, host.options);
  try {
    return await holdPrimitive(host, win, o);
  } catch (error) {
    if (error instanceof LockError && error.code === 'ACQUIRE_TIMEOUT') return null;
    throw error;
  }
}

/** withLock for a primitive: acquire, keep extended while `fn` runs, always release; LockLostError if it was lost meanwhile. */
export async function withHold<T>(
  host: HoldHost,
  win: Win,
  fn: (lock: Lock) => Promise<T> | T,
  opts: WithLockOptions | undefined,
): Promise<T> {
  const o = resolveWithLockOptions(opts, host.options);
  if (typeof fn !== 'function') throw new InvalidArgumentError('a function to run while holding is required');
  return runWhileHeld(await holdPrimitive(host, win, o), fn);
}
