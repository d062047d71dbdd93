// The few etcd calls the lock recipe makes, each bounded by a deadline, every failure turned into a NodeError
// that names the cluster (what a Redis node's error names is its address). The etcd3 package is an optional
// peer dependency: it is loaded only when a manager is given an etcd:// URL, and a client the user made is
// used through the small structural type below, so fencelock's types never require it.
import type { Etcd3, IOptions } from 'etcd3';
import type { IKeyValue, IRangeRequest, IRangeResponse, ITxnRequest, ITxnResponse } from './etcd3-types.js';
import type { BackendHost } from '../backend.js';
import { StoreFailures } from '../consensus-call.js';
import { InvalidArgumentError, NodeError, NodeTimeoutError } from '../errors.js';
import { HostBreakers } from './host-breakers.js';

/** An etcd3 client (`new Etcd3({ hosts })`), as far as fencelock needs to recognise one. */
export interface EtcdClient {
  /** the client's KV service */
  readonly kv: object;
  /** the client's lease service */
  readonly leaseClient: object;
  /** starts a watch */
  watch(): unknown;
  /** closes the client's connections (fencelock does so only for a client it made from a URL) */
  close(): void;
}

/** What `new LockManager(…)` accepts for etcd: an etcd3 client, or an `etcd://host:port,host:port` URL it connects and owns. */
export type EtcdInput = EtcdClient | string;

const URL_PREFIX = 'etcd://';

export function isEtcdInput(input: unknown): input is EtcdInput {
  if (typeof input === 'string') return input.startsWith(URL_PREFIX);
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return false;
  const c = input as Partial<EtcdClient>;
  return typeof c.kv === 'object' && typeof c.leaseClient === 'object' && typeof c.watch === 'function';
}

/** `etcd://a:2379,b:2379` → ['http://a:2379', 'http://b:2379']. InvalidArgumentError on anything else. */
export function parseEtcdUrl(url: string): string[] {
  if (!url.startsWith(URL_PREFIX))
    throw new InvalidArgumentError(`etcd URL must be etcd://host:port[,host:port…], got ${JSON.stringify(url)}`);
  const rest = url.slice(URL_PREFIX.length).replace(/\/+$/, '');
  const hosts = rest.split(',').map((h) => h.trim());
  for (const h of hosts)
    if (!/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:]+\]:\d{1,5}$/.test(h))
      throw new InvalidArgumentError(`etcd URL must be etcd://host:port[,host:port…], got ${JSON.stringify(url)}`);
  return hosts.map((h) => `http://${h}`);
}

/**
 * etcd3's watch stream reconnects after a failure with a timer its close() does not clear (etcd3 1.1.2,
 * WatchManager.handleError), backing off to 30 s by default: found by `npm run chaos -- --backend etcd`, where a
 * worker that had closed everything stayed alive that long. A client fencelock makes backs off from 100 ms to
 * 1 s instead, so a waiter's watch is back within a second and nothing outlives close() by more than that.
 */
const WATCH_BACKOFF_MS = [100, 1_000] as const;

/**
 * The most one attempt of a read may take, as a share of the call's deadline: a read that meets a stuck
 * member (a frozen one; a follower whose linearizable read was dropped during an election, which etcd 3.4
 * answers only after its own 7 s request timeout) moves on to another member while the call has time left.
 * A write is given the whole call: every member forwards it to the one leader, and a slow write is a slow
 * disk there, which another member cannot make faster (and a write that timed out may still apply).
 * A quarter (500 ms), not a half: a keep-alive sent during a leader election, to a follower that forwards it to
 * the dead leader, is not answered after the new leader is elected either; with 1 s attempts the holder of a
 * 3 s lock in the leader-kill test had one stuck from 0.5 s before the election to 0.5 s after its validity
 * (issue 23, traced). A healthy member answers a read in milliseconds.
 */
const READ_ATTEMPT_SHARE = 0.25;
/** No attempt is started with less than this left of its call: it would only fail, and count against a healthy member. */
const MIN_ATTEMPT_MS = 100;
/** Attempts of one call at most (each on the next member etcd3 picks): bounded also when every one fails at once. */
const MAX_ATTEMPTS = 8;
/**
 * An attempt that failed within this without an answer (a dead member refused the connection; a member whose
 * channel etcd3 reset after a timeout is still reconnecting) is followed by a pause from the second one on,
 * FAST_FAILURE_PAUSE_MS doubled each time: 4 such attempts used to go by in 40 ms, and a keep-alive round that
 * met a leader's SIGKILL was over long before the election, so a holder with a 3 s lease lost its lock (issue
 * 23, traced: the round failed 1 s after the kill, the next one stuck 1 s on a follower, the election took 2.4 s).
 */
const FAST_FAILURE_MS = 50;
const FAST_FAILURE_PAUSE_MS = 100;

/**
 * etcd3's global fault policy without its retries: the owned client's calls are tried again by #call, with
 * per-attempt deadlines inside the call's own. (etcd3 calls only `execute` of this policy.)
 */
const ONE_ATTEMPT = {
  execute: <T>(fn: (context: { signal: AbortSignal; attempt: number }) => PromiseLike<T> | T): Promise<T> =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal, attempt: 0 })),
};
function watchBackoff(ms: number): { readonly duration: number; next(): ReturnType<typeof watchBackoff> } {
  return { duration: ms, next: () => watchBackoff(Math.min(ms * 2, WATCH_BACKOFF_MS[1])) };
}

/** One watch on one key: stop() cancels it. */
export interface KeyWatch {
  stop(): void;
}

export class EtcdStore {
  /** how errors name the cluster: `etcd://host:port,…` */
  readonly name: string;
  /** where the recipe reports a failed call: the manager's nodeError event */
  readonly failures: StoreFailures;
  readonly #client: Promise<Etcd3>;
  /** etcd3's test for an error worth another attempt (unavailable, deadline exceeded, …), once it is loaded */
  #recoverable: (error: Error) => boolean = () => false;
  /** etcd3's conversion of a raw gRPC error into its typed errors (which #recoverable recognises), once it is loaded */
  #typed: (error: Error) => Error = (error) => error;
  readonly #owned: boolean;
  /** the watches started and not yet stopped: how to cancel each */
  readonly #watches = new Set<() => Promise<unknown>>();
  readonly #timeout: number;
  /** close() began: no call starts any more (a call on a closed etcd3 client reopens its connections, which then outlive the manager) */
  #closed = false;

  constructor(input: EtcdInput, timeout: number, host: BackendHost) {
    this.#timeout = timeout;
    if (typeof input === 'string') {
      const hosts = parseEtcdUrl(input);
      this.name = input;
      this.#owned = true;
      this.#client = import('etcd3').then(
        ({ Etcd3, isRecoverableError, castGrpcError }) => {
          this.#recoverable = isRecoverableError;
          this.#typed = castGrpcError;
          return new Etcd3({
            hosts,
            dialTimeout: timeout,
            // No retries inside etcd3: #call makes the attempts itself, each with a deadline inside the call's
            // (see there). A stream (a keep-alive, a watch) is given the call's deadline here.
            defaultCallOptions: () => ({ deadline: new Date(Date.now() + timeout) }),
            faultHandling: {
              global: ONE_ATTEMPT as unknown as NonNullable<NonNullable<IOptions['faultHandling']>['global']>,
              // etcd3's breakers per member, but never all open at once (host-breakers.ts).
              host: new HostBreakers((error) => error instanceof Error && isRecoverableError(error)).forHost as unknown as NonNullable<
                NonNullable<IOptions['faultHandling']>['host']
              >,
              watchBackoff: watchBackoff(WATCH_BACKOFF_MS[0]),
            },
          });
        },
        () => {
          throw new InvalidArgumentError(`${input} needs the etcd3 package: npm install etcd3`);
        },
      );
    } else {
      const hosts = (input as unknown as { options?: { hosts?: string | string[] } }).options?.hosts;
      this.name = `etcd://${[hosts ?? 'client']
        .flat()
        .map((h) => h.replace(/^https?:\/\//, ''))
        .join(',')}`;
      this.#owned = false;
      this.#client = Promise.resolve(input as unknown as Etcd3);
    }
    this.failures = new StoreFailures(this.name, host);
    // A failed import surfaces at the first call, never as an unhandled rejection.
    this.#client.catch(() => undefined);
  }

  /** A lease of `seconds` (the server may grant more: its minimum); its id. */
  async grant(seconds: number): Promise<{ id: string; ttl: number }> {
    const res = await this.#call('grant a lease', (c, o) => c.leaseClient.leaseGrant({ TTL: seconds }, o), 'write');
    if (res.error) throw new NodeError(this.name, `lease grant refused: ${res.error}`);
    return { id: String(res.ID), ttl: Number(res.TTL) };
  }

  /** Renews the lease to its granted ttl; the ttl (s) left after renewal, 0 when the lease no longer exists. */
  async keepAlive(id: string): Promise<number> {
    return this.#call(
      'keep a lease alive',
      async (c, o) => {
        const stream = await c.leaseClient.leaseKeepAlive(o);
        try {
          const res = await new Promise<{ TTL: string }>((resolve, reject) => {
            stream.on('data', resolve);
            // A stream's error comes raw from gRPC (etcd3 types only its unary calls' errors): typed here, so
            // that a keep-alive sent to a dead member (UNAVAILABLE) is tried again on another one, as a
            // unary call would be, instead of failing the renewal (and the acquire that waited on it) at once.
            stream.on('error', (error: Error) => reject(this.#typed(error)));
            stream.on('end', () => reject(new Error('keep-alive stream ended')));
            stream.write({ ID: id });
          });
          return Math.max(0, Number(res.TTL));
        } finally {
          stream.end();
        }
      },
      'read',
    );
  }

  /** Revokes the lease, deleting every key attached to it. false: it did not exist (any more). */
  async revoke(id: string): Promise<boolean> {
    try {
      await this.#call('revoke a lease', (c, o) => c.leaseClient.leaseRevoke({ ID: id }, o), 'write');
      return true;
    } catch (error) {
      if (/lease not found/i.test(String((error as Error).cause ?? error))) return false;
      throw error;
    }
  }

  /** ms left on the lease, -1 when it does not exist. */
  async timeToLive(id: string): Promise<number> {
    const res = await this.#call('read a lease', (c, o) => c.leaseClient.leaseTimeToLive({ ID: id }, o), 'read');
    return Number(res.TTL) < 0 ? -1 : Number(res.TTL) * 1000;
  }

  txn(what: string, req: ITxnRequest): Promise<ITxnResponse> {
    const readOnly = [...(req.success ?? []), ...(req.failure ?? [])].every((op) => op.request_range !== undefined);
    return this.#call(what, (c, o) => c.kv.txn(req, o), readOnly ? 'read' : 'write');
  }

  range(what: string, req: IRangeRequest): Promise<IRangeResponse> {
    return this.#call(what, (c, o) => c.kv.range(req, o), 'read');
  }

  /**
   * Calls `onDelete` for each deletion of `key` (or, with `{ prefix }`, of any key under it) at or after
   * `fromRevision` (so a deletion between reading the key and starting the watch is not missed). The
   * client's watch manager reconnects on its own when a member or the leader fails; `onError` hears of a
   * watch that cannot go on.
   */
  async watchDeletes(
    what: { key: Buffer } | { prefix: Buffer },
    fromRevision: string,
    onDelete: (kv: IKeyValue) => void,
    onError: (error: Error) => void,
  ): Promise<KeyWatch> {
    const client = await this.#client;
    this.#throwIfClosed('watch a key');
    const builder = 'key' in what ? client.watch().key(what.key) : client.watch().prefix(what.prefix);
    return this.#watch(builder.startRevision(fromRevision).only('delete'), onDelete, onError);
  }

  async #watch(builder: ReturnType<Etcd3['watch']>, onDelete: (kv: IKeyValue) => void, onError: (error: Error) => void): Promise<KeyWatch> {
    // The Watcher before it connects (create() is this plus the wait below), so that it can be cancelled at any
    // time. A watch still starting when the cluster went away stays in etcd3's watch manager otherwise, and the
    // manager tries to connect it again every second for as long as the process lives: after close(), a process
    // whose cluster was down lingered that way (the etcd outage fixture, test/process-exit.test.ts).
    const watcher = builder.watcher();
    const cancel = (): Promise<unknown> => watcher.cancel().catch(() => undefined);
    // Every watch this store started, until it is cancelled: close() cancels what is left.
    this.#watches.add(cancel);
    const stop = (): void => {
      if (this.#watches.delete(cancel)) void cancel();
    };
    const connected = new Promise<void>((resolve, reject) => {
      watcher.once('connected', () => resolve());
      watcher.once('error', reject);
    });
    try {
      await withDeadline(connected, this.#timeout, () => new NodeTimeoutError(this.name, this.#timeout));
    } catch (error) {
      stop();
      throw this.#nodeError('watch a key', error);
    }
    watcher.on('delete', (kv) => onDelete(kv));
    watcher.on('error', (error) => onError(this.#nodeError('watch a key', error)));
    return { stop };
  }

  /** Cancels the watches still running; closes the client if the manager made it. */
  async close(): Promise<void> {
    this.#closed = true;
    const cancels = [...this.#watches];
    this.#watches.clear();
    // Bounded: a watch that is connected is cancelled by a request to the cluster, which may be out of reach.
    await withDeadline(
      Promise.all(cancels.map((cancel) => cancel())),
      this.#timeout,
      () => new Error('watches still being cancelled'),
    ).catch(() => undefined);
    if (!this.#owned) return;
    const client = await this.#client.catch(() => undefined);
    client?.close();
  }

  /**
   * One call, bounded by the store's timeout as a whole. A user's client gets that one deadline (and retries
   * as it was configured). Our own client is tried here, up to MAX_ATTEMPTS times on a recoverable error
   * (paced after a failure without an answer, see FAST_FAILURE_MS),
   * each attempt's deadline never past the call's end, and a read's at most READ_ATTEMPT_SHARE of it:
   * - the call's end bounds it: an extension round must end within the backend's roundTimeout. With a fresh
   *   deadline per attempt and etcd3's 3 attempts, one keep-alive round could last 6 s: in the leader-kill
   *   fault test the holder's round met the election (a follower's read waits there for etcd's own 7 s
   *   timeout), outlasted the lock's 3 s ttl, and the holder lost its lock;
   * - a read attempt's share leaves the call time to try another member after a stuck one;
   * - no attempt starts with less than MIN_ATTEMPT_MS left: with one deadline for all attempts, a call that
   *   timed out on a frozen member sent its retries to the healthy ones already expired; each counted as
   *   their failure, their circuit breakers opened too, and every call failed for seconds (the
   *   frozen-member fault test, one run in four).
   */
  async #call<T>(what: string, run: (client: Etcd3, options: { deadline?: Date }) => Promise<T>, kind: 'read' | 'write'): Promise<T> {
    const client = await this.#client;
    const end = Date.now() + this.#timeout;
    for (let attempt = 1, fastFailures = 0; ; attempt++) {
      const left = end - Date.now();
      const share = this.#owned && kind === 'read' ? READ_ATTEMPT_SHARE : 1;
      this.#throwIfClosed(what);
      const startedAt = Date.now();
      const deadline = new Date(startedAt + Math.min(left, this.#timeout * share));
      try {
        return await run(client, { deadline });
      } catch (error) {
        const again =
          this.#owned && attempt < MAX_ATTEMPTS && end - Date.now() >= MIN_ATTEMPT_MS && error instanceof Error && this.#recoverable(error);
        if (!again) throw this.#nodeError(what, error);
        // The first such failure is tried again at once: most likely the dead member, and another one answers.
        if (Date.now() - startedAt < FAST_FAILURE_MS && fastFailures++ > 0) {
          const pause = Math.min(FAST_FAILURE_PAUSE_MS * 2 ** (fastFailures - 2), end - Date.now() - MIN_ATTEMPT_MS);
          if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
        }
      }
    }
  }

  #throwIfClosed(what: string): void {
    if (this.#closed) throw new NodeError(this.name, `could not ${what}: the manager is closed`);
  }

  #nodeError(what: string, error: unknown): NodeError {
    if (error instanceof NodeError) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (/deadline/i.test(message) || (error as { name?: string })?.name === 'GRPCDeadlineExceededError')
      return new NodeTimeoutError(this.name, this.#timeout);
    return new NodeError(this.name, `could not ${what}: ${message}`, { cause: error });
  }
}

/** `work`, or `timeoutError()` after `ms`. */
function withDeadline<T>(work: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
