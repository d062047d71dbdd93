import { InvalidArgumentError } from './errors.js';

/** Capped exponential backoff with jitter, used while waiting when no release notification arrives. */
export interface RetryOptions {
  /** first delay cap in ms (default 25) */
  minDelay?: number;
  /** largest delay in ms (default 1000) */
  maxDelay?: number;
  /** growth per attempt (default 2) */
  factor?: number;
  /** 'full': a uniform delay in [0, cap]; 'none': exactly the cap (default 'full') */
  jitter?: 'full' | 'none';
}

/**
 * Restart quarantine mode: `'auto'` (default: a node that lost its data counts toward no acquire until every
 * lease it may have helped grant has ended), a number N of ms (strict: no node whose data is younger than N ms
 * counts), or `false` (off). See docs/how-it-works.md, "Restart quarantine".
 */
export type RestartQuarantine = 'auto' | false | number;

/** Options of `new LockManager(clients, options)`; every one has a default. Checked before any connection is made. */
export interface LockManagerOptions {
  /** default lease in ms (default 30_000) */
  ttl?: number;
  /** default max wait of acquire() in ms (default 10_000) */
  acquireTimeout?: number;
  /** clock drift allowance: drift = ttl * driftFactor + 2 ms (default 0.01) */
  driftFactor?: number;
  /** per-node request timeout in ms, must be < ttl / 3 (default 200) */
  nodeTimeout?: number;
  /** backoff between retries while waiting, when no release notification comes first */
  retry?: RetryOptions;
  /** prefix of every key and channel fencelock uses (default 'fencelock:') */
  keyPrefix?: string;
  /**
   * Restart quarantine (the Redlock spec's delayed restart): 'auto' (default) keeps a node that lost its
   * data out of every acquire until every lease granted with its help before the loss has ended; a number
   * N of ms (strict) keeps out every node whose data is younger than N ms; false turns it off.
   */
  restartQuarantine?: RestartQuarantine;
  /**
   * Primaries with replicas: a node's grant counts only once `replicas` of its replicas confirmed the
   * lock write (`WAIT replicas timeout` right after the acquire script). Default false (no WAIT).
   */
  waitForReplicas?: WaitForReplicas | false;
}

/** `waitForReplicas`: a node's grant counts once this many of its replicas confirmed the lock write. */
export interface WaitForReplicas {
  /** replicas that must have the write (at least 1) */
  replicas: number;
  /** ms to wait for them, per node (WAIT's timeout); counts against the lease like any other delay */
  timeout: number;
}

/** Options of `acquire`, `tryAcquire` (no `timeout`) and, with auto-extension on by default, `withLock`. */
export interface AcquireOptions {
  /** lease in ms (default: the manager's `ttl`) */
  ttl?: number;
  /** max wait in ms; 0 = one attempt (default: the manager's `acquireTimeout`) */
  timeout?: number;
  /** aborts the wait: `acquire` rejects with the signal's reason */
  signal?: AbortSignal;
  /** backoff between retries (default: the manager's `retry`) */
  retry?: RetryOptions;
  /**
   * Wait in line (default true): the lock goes to waiters in arrival order, across processes, and a
   * release wakes only the next one. false: compete on every release, as plain Redlock does.
   */
  fair?: boolean;
  /** keep the lease extended until release (default false; withLock: true) */
  autoExtend?: boolean;
  /** stop auto-extending after the lock has been held this long, in ms (default unlimited) */
  maxHold?: number;
}

/** withLock's options: as acquire's, but auto-extension is on by default. */
export type WithLockOptions = AcquireOptions;

/** {@link RetryOptions} with the defaults filled in. */
export interface ResolvedRetry {
  /** first delay cap, ms */
  readonly minDelay: number;
  /** largest delay, ms */
  readonly maxDelay: number;
  /** growth per attempt */
  readonly factor: number;
  /** 'full': uniform in [0, cap]; 'none': the cap */
  readonly jitter: 'full' | 'none';
}

/** A manager's {@link LockManagerOptions} with the defaults filled in (`locks.options`). */
export interface ResolvedManagerOptions {
  /** default lease, ms (default 30 000) */
  readonly ttl: number;
  /** default max wait of acquire(), ms (default 10 000) */
  readonly acquireTimeout: number;
  /** drift = ttl × driftFactor + 2 ms (default 0.01) */
  readonly driftFactor: number;
  /** per-node request timeout, ms (default 200); 0 on etcd and ZooKeeper, which have no per-node calls */
  readonly nodeTimeout: number;
  /** default backoff while waiting */
  readonly retry: ResolvedRetry;
  /** prefix of every key and channel (default 'fencelock:') */
  readonly keyPrefix: string;
  /** restart quarantine mode (default 'auto') */
  readonly restartQuarantine: RestartQuarantine;
  /** replicas that must confirm a grant, or false (default) */
  readonly waitForReplicas: Readonly<WaitForReplicas> | false;
}

export const DEFAULTS: ResolvedManagerOptions = Object.freeze({
  ttl: 30_000,
  acquireTimeout: 10_000,
  driftFactor: 0.01,
  nodeTimeout: 200,
  retry: Object.freeze({ minDelay: 25, maxDelay: 1_000, factor: 2, jitter: 'full' as const }),
  keyPrefix: 'fencelock:',
  restartQuarantine: 'auto' as const,
  waitForReplicas: false as const,
});

const MAX_TTL = 2 ** 31 - 1;

/** Options that only mean something for Redis (its clocks, its restarts, its nodes, its replicas). */
const REDIS_ONLY = ['driftFactor', 'restartQuarantine', 'nodeTimeout', 'waitForReplicas'] as const;

/**
 * For a consensus store (etcd, ZooKeeper): a Redis-only option given explicitly is a mistake worth saying
 * (InvalidArgumentError, `why` saying what takes its place), not something to ignore silently.
 */
export function rejectRedisOnlyOptions(given: LockManagerOptions | undefined, why: string): void {
  for (const name of REDIS_ONLY)
    if (given && given[name] !== undefined) throw new InvalidArgumentError(`${name} only applies to Redis; ${why}`);
}

/** The validity arithmetic's one constant part: how much a lease loses to clock drift. */
export function driftOf(ttl: number, driftFactor: number): number {
  return Math.floor(ttl * driftFactor) + 2;
}

/** The defaults on etcd and ZooKeeper: no nodeTimeout, so no ttl is refused for want of room for three of them. */
const CONSENSUS_DEFAULTS: ResolvedManagerOptions = Object.freeze({ ...DEFAULTS, nodeTimeout: 0 });

/**
 * `perNodeCalls`: the store is Redis nodes, each call bounded by nodeTimeout (which must fit three times in a
 * lease). On etcd and ZooKeeper nodeTimeout is 0: the backend rejects one given (rejectRedisOnlyOptions).
 */
export function resolveManagerOptions(opts: unknown, perNodeCalls = true): ResolvedManagerOptions {
  const defaults = perNodeCalls ? DEFAULTS : CONSENSUS_DEFAULTS;
  if (opts === undefined) return defaults;
  const o = plainObject(opts, 'options');
  const driftFactor = o.driftFactor === undefined ? DEFAULTS.driftFactor : checkDriftFactor(o.driftFactor);
  const ttl = o.ttl === undefined ? DEFAULTS.ttl : checkTtl(o.ttl, driftFactor, 'ttl');
  const nodeTimeout =
    !perNodeCalls || o.nodeTimeout === undefined ? defaults.nodeTimeout : checkPositiveInteger(o.nodeTimeout, 'nodeTimeout');
  checkNodeTimeout(nodeTimeout, ttl);
  return Object.freeze({
    ttl,
    driftFactor,
    nodeTimeout,
    acquireTimeout: o.acquireTimeout === undefined ? DEFAULTS.acquireTimeout : checkTimeout(o.acquireTimeout, 'acquireTimeout'),
    retry: resolveRetry(o.retry, DEFAULTS.retry),
    keyPrefix: o.keyPrefix === undefined ? DEFAULTS.keyPrefix : checkPrefix(o.keyPrefix),
    restartQuarantine: o.restartQuarantine === undefined ? DEFAULTS.restartQuarantine : checkQuarantine(o.restartQuarantine),
    waitForReplicas: checkWaitForReplicas(o.waitForReplicas, ttl),
  });
}

export interface ResolvedAcquire {
  readonly ttl: number;
  readonly timeout: number;
  readonly signal: AbortSignal | undefined;
  readonly retry: ResolvedRetry;
  readonly fair: boolean;
  readonly autoExtend: boolean;
  readonly maxHold: number;
}

/** A manager's calls made without options resolve to these, built once per manager options (a call then allocates none). */
interface CallDefaults {
  readonly acquire: ResolvedAcquire;
  readonly tryAcquire: ResolvedAcquire;
  readonly withLock: ResolvedAcquire;
}

const callDefaults = new WeakMap<ResolvedManagerOptions, CallDefaults>();

function defaultsOf(m: ResolvedManagerOptions): CallDefaults {
  let d = callDefaults.get(m);
  if (d === undefined) {
    const acquire: ResolvedAcquire = Object.freeze({
      ttl: m.ttl,
      timeout: m.acquireTimeout,
      signal: undefined,
      retry: m.retry,
      fair: true,
      autoExtend: false,
      maxHold: Infinity,
    });
    d = { acquire, tryAcquire: Object.freeze({ ...acquire, timeout: 0 }), withLock: Object.freeze({ ...acquire, autoExtend: true }) };
    callDefaults.set(m, d);
  }
  return d;
}

export function resolveAcquireOptions(opts: unknown, m: ResolvedManagerOptions): ResolvedAcquire {
  if (opts === undefined) return defaultsOf(m).acquire;
  const o = plainObject(opts, 'acquire options');
  const ttl = o.ttl === undefined ? m.ttl : checkLeaseTtl(o.ttl, m);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
    throw new InvalidArgumentError(`signal must be an AbortSignal, got ${show(o.signal)}`);
  if (o.fair !== undefined && typeof o.fair !== 'boolean') throw new InvalidArgumentError(`fair must be a boolean, got ${show(o.fair)}`);
  if (o.autoExtend !== undefined && typeof o.autoExtend !== 'boolean')
    throw new InvalidArgumentError(`autoExtend must be a boolean, got ${show(o.autoExtend)}`);
  return {
    ttl,
    timeout: o.timeout === undefined ? m.acquireTimeout : checkTimeout(o.timeout, 'timeout'),
    signal: o.signal as AbortSignal | undefined,
    retry: resolveRetry(o.retry, m.retry),
    fair: o.fair ?? true,
    autoExtend: o.autoExtend ?? false,
    maxHold: o.maxHold === undefined ? Infinity : checkPositiveInteger(o.maxHold, 'maxHold'),
  };
}

/** tryAcquire: acquire's options with no waiting (timeout 0). */
export function resolveTryAcquireOptions(opts: unknown, m: ResolvedManagerOptions): ResolvedAcquire {
  if (opts === undefined) return defaultsOf(m).tryAcquire;
  return { ...resolveAcquireOptions(opts, m), timeout: 0 };
}

/** withLock: acquire's options with auto-extension on unless turned off. */
export function resolveWithLockOptions(opts: unknown, m: ResolvedManagerOptions): ResolvedAcquire {
  if (opts === undefined) return defaultsOf(m).withLock;
  const base = resolveAcquireOptions(opts, m);
  return { ...base, autoExtend: ((opts as Record<string, unknown>).autoExtend as boolean | undefined) ?? true };
}

/** Resources are validated and sorted once: the sorted order is the order keys are locked in. */
export function resolveResources(resource: unknown): readonly string[] {
  // One name, the common call: checked alike, without the set and the sort a list needs.
  if (typeof resource === 'string') return Object.freeze([checkResource(resource)]);
  const list = Array.isArray(resource) ? resource : [resource];
  if (list.length === 0) throw new InvalidArgumentError('resource list is empty');
  const seen = new Set<string>();
  for (const r of list) {
    checkResource(r);
    if (seen.has(r)) throw new InvalidArgumentError(`duplicate resource ${JSON.stringify(r)}`);
    seen.add(r);
  }
  return Object.freeze([...seen].sort());
}

function checkResource(r: unknown): string {
  if (typeof r !== 'string') throw new InvalidArgumentError(`resource must be a string, got ${show(r)}`);
  if (r.length === 0) throw new InvalidArgumentError('resource must not be an empty string');
  // A lone surrogate has no UTF-8 form: Redis would see U+FFFD, and two names would share one key.
  if (!(r as WellFormedString).isWellFormed())
    throw new InvalidArgumentError(`resource ${show(r)} is not well-formed Unicode (lone surrogate)`);
  return r;
}

/** `String.prototype.isWellFormed` (ES2024, in every Node this package supports; not yet in the ES2022 lib typings). */
type WellFormedString = string & { isWellFormed(): boolean };

export function resolveSingleResource(resource: unknown): string {
  if (Array.isArray(resource)) throw new InvalidArgumentError('expected one resource name, got an array');
  return resolveResources(resource)[0] as string;
}

/** A lease given per call: a valid ttl that also leaves room for three node timeouts. */
export function checkLeaseTtl(v: unknown, m: Pick<ResolvedManagerOptions, 'driftFactor' | 'nodeTimeout'>): number {
  const ttl = checkTtl(v, m.driftFactor, 'ttl');
  checkNodeTimeout(m.nodeTimeout, ttl);
  return ttl;
}

export function checkTtl(v: unknown, driftFactor: number, name: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TTL) {
    throw new InvalidArgumentError(`${name} must be an integer in [1, ${MAX_TTL}] ms, got ${show(v)}`);
  }
  const drift = driftOf(v, driftFactor);
  if (v <= drift) throw new InvalidArgumentError(`${name} ${v} ms must be larger than its clock drift allowance (${drift} ms)`);
  return v;
}

function resolveRetry(v: unknown, base: ResolvedRetry): ResolvedRetry {
  if (v === undefined) return base;
  const o = plainObject(v, 'retry');
  const minDelay = o.minDelay === undefined ? base.minDelay : checkNonNegative(o.minDelay, 'retry.minDelay');
  const maxDelay = o.maxDelay === undefined ? Math.max(base.maxDelay, minDelay) : checkNonNegative(o.maxDelay, 'retry.maxDelay');
  if (maxDelay < 1)
    throw new InvalidArgumentError(`retry.maxDelay must be at least 1 ms (0 would make waiting a busy loop), got ${maxDelay}`);
  if (maxDelay < minDelay) throw new InvalidArgumentError(`retry.maxDelay (${maxDelay}) must be >= retry.minDelay (${minDelay})`);
  const factor = o.factor === undefined ? base.factor : checkNonNegative(o.factor, 'retry.factor');
  if (factor < 1) throw new InvalidArgumentError(`retry.factor must be >= 1, got ${factor}`);
  if (o.jitter !== undefined && o.jitter !== 'full' && o.jitter !== 'none')
    throw new InvalidArgumentError(`retry.jitter must be 'full' or 'none', got ${show(o.jitter)}`);
  return Object.freeze({ minDelay, maxDelay, factor, jitter: (o.jitter as 'full' | 'none' | undefined) ?? base.jitter });
}

function checkDriftFactor(v: unknown): number {
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0 || v >= 0.5)
    throw new InvalidArgumentError(`driftFactor must be a number in [0, 0.5), got ${show(v)}`);
  return v;
}

function checkNodeTimeout(nodeTimeout: number, ttl: number): void {
  if (nodeTimeout >= ttl / 3) throw new InvalidArgumentError(`nodeTimeout (${nodeTimeout} ms) must be less than ttl / 3 (${ttl} / 3 ms)`);
}

function checkTimeout(v: unknown, name: string): number {
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0)
    throw new InvalidArgumentError(`${name} must be a non-negative number of ms, got ${show(v)}`);
  // Infinity is allowed: wait until the signal aborts.
  return v;
}

function checkNonNegative(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new InvalidArgumentError(`${name} must be a finite non-negative number, got ${show(v)}`);
  return v;
}

function checkPositiveInteger(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TTL)
    throw new InvalidArgumentError(`${name} must be an integer in [1, ${MAX_TTL}], got ${show(v)}`);
  return v;
}

function checkPrefix(v: unknown): string {
  if (typeof v !== 'string') throw new InvalidArgumentError(`keyPrefix must be a string, got ${show(v)}`);
  return v;
}

function checkQuarantine(v: unknown): RestartQuarantine {
  if (v === 'auto' || v === false) return v;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_TTL) return v;
  throw new InvalidArgumentError(`restartQuarantine must be 'auto', false or a non-negative integer of ms, got ${show(v)}`);
}

function plainObject(v: unknown, name: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError(`${name} must be an object, got ${show(v)}`);
  return v as Record<string, unknown>;
}

export function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'function') return 'a function';
  return `an object (${(v as object).constructor?.name ?? 'Object'})`;
}

function checkWaitForReplicas(v: unknown, ttl: number): Readonly<WaitForReplicas> | false {
  if (v === undefined || v === false) return false;
  const o = plainObject(v, 'waitForReplicas');
  const replicas = checkPositiveInteger(o.replicas, 'waitForReplicas.replicas');
  const timeout = checkPositiveInteger(o.timeout, 'waitForReplicas.timeout');
  if (timeout >= ttl / 3)
    throw new InvalidArgumentError(`waitForReplicas.timeout (${timeout}) must be < ttl / 3 (${ttl / 3}): it is spent from the lease`);
  return Object.freeze({ replicas, timeout });
}
