// The few ZooKeeper calls the lock recipe makes, over the pure-JavaScript `node-zookeeper-client` (an optional
// peer dependency, loaded only when a manager is given a zk:// URL). Each call is bounded by a deadline and
// every failure becomes a NodeError naming the ensemble, as a Redis node's error names its address.
//
// The lease of every lock is the client's session. Two things the client library does not do, done here:
// - it never notices a server that hangs (SIGSTOP, a stalled disk): a call that outlives its deadline drops
//   the connection, and the client reconnects to another server with the same session;
// - after a session expired it stays dead: a manager that made its client makes a new one, and tells every
//   grant of the old session that it is lost.
import type { Client, Stat } from './client-types.js';
import { guardFraming } from './framing-guard.js';
import type { BackendHost } from '../backend.js';
import { StoreFailures } from '../consensus-call.js';
import { InvalidArgumentError, NodeError, NodeTimeoutError } from '../errors.js';

/** A node-zookeeper-client `Client` (`createClient(hosts)`), as far as fencelock needs to recognise one. */
export interface ZooKeeperClient {
  /** the client's session id (8 bytes) */
  getSessionId(): Buffer;
  /** the session timeout the ensemble granted, ms */
  getSessionTimeout(): number;
  /** starts a multi-op transaction */
  transaction(): unknown;
  /** closes the session (fencelock does so only for a client it made from a URL) */
  close(): void;
}

/** What `new LockManager(…)` accepts for ZooKeeper: a node-zookeeper-client client, or a `zk://host:port,…` URL it connects and owns. */
export type ZooKeeperInput = ZooKeeperClient | string;

const URL_PREFIX = 'zk://';

export function isZooKeeperInput(input: unknown): input is ZooKeeperInput {
  if (typeof input === 'string') return input.startsWith(URL_PREFIX);
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return false;
  const c = input as Partial<ZooKeeperClient>;
  return typeof c.getSessionId === 'function' && typeof c.getSessionTimeout === 'function' && typeof c.transaction === 'function';
}

/** `zk://a:2181,b:2181` → 'a:2181,b:2181' (a connection string). InvalidArgumentError on anything else. */
export function parseZooKeeperUrl(url: string): string {
  const bad = (): InvalidArgumentError =>
    new InvalidArgumentError(`ZooKeeper URL must be zk://host:port[,host:port…], got ${JSON.stringify(url)}`);
  if (!url.startsWith(URL_PREFIX)) throw bad();
  const hosts = url
    .slice(URL_PREFIX.length)
    .replace(/\/+$/, '')
    .split(',')
    .map((h) => h.trim());
  for (const h of hosts) if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(h)) throw bad();
  return hosts.join(',');
}

/** A session: its id (for the ephemeral owner of our znodes) and the timeout the ensemble granted it. */
export interface Session {
  readonly client: Client;
  readonly id: string;
  readonly timeout: number;
}

/** The ZooKeeper error codes the recipe tells apart. */
const OK = 0;
const NO_NODE = -101;
const NODE_EXISTS = -110;
const NOT_EMPTY = -111;

const PERSISTENT = 0;
const EPHEMERAL_SEQUENTIAL = 3;

/** One queue's part of an enqueue: the queue's path, our znode's path in it (before its sequence number), and whether the queue's own znode is made with it. */
export interface Place {
  readonly queue: string;
  readonly node: string;
  readonly withQueue: boolean;
}

/**
 * What an enqueue did: our znodes' paths and, per place, the zxid of the write that made its queue with our
 * znode (undefined where the queue was there); or why it made nothing (each a path to act on).
 */
export type Enqueued =
  { paths: string[]; madeAt: Array<bigint | undefined> } | { missing: string } | { exists: string } | { rootMissing: string };

const codeOf = (error: unknown): number | undefined => (error as { getCode?: () => number })?.getCode?.();

export class ZooKeeperStore {
  /** how errors name the ensemble: `zk://host:port,…` */
  readonly name: string;
  /** where the recipe reports a failed call: the manager's nodeError event */
  readonly failures: StoreFailures;
  readonly #owned: boolean;
  readonly #timeout: number;
  readonly #sessionTimeout: number;
  readonly #connectionString: string | undefined;
  /** the user's client, when the manager was given one */
  readonly #given: Client | undefined;
  #session: Promise<Session> | undefined;
  #closed = false;
  /** takes the session's expiry listener off its client: close() calls it, so that the user's client keeps none of ours */
  #unwatchSession: (() => void) | undefined;
  /** told when a session expires: the grants made under it are lost */
  readonly #expiry = new Set<(sessionId: string) => void>();

  /** `sessionTimeout`: what a client made from a URL asks for (the ensemble may grant less or more). */
  constructor(input: ZooKeeperInput, timeout: number, sessionTimeout: number, host: BackendHost) {
    this.#timeout = timeout;
    this.#sessionTimeout = sessionTimeout;
    if (typeof input === 'string') {
      this.#connectionString = parseZooKeeperUrl(input);
      this.name = input;
      this.#owned = true;
    } else {
      const hosts = (input as unknown as { connectionManager?: { servers?: Array<{ host: string; port: number }> } }).connectionManager
        ?.servers;
      this.name = `zk://${hosts?.map((s) => `${s.host}:${s.port}`).join(',') ?? 'client'}`;
      this.#owned = false;
      this.#given = input as unknown as Client;
    }
    this.failures = new StoreFailures(this.name, host);
  }

  /** The live session: connected (or reconnecting within its timeout); a new one after an expiry, if the client is ours. */
  session(): Promise<Session> {
    if (this.#closed) return Promise.reject(new NodeError(this.name, 'the manager is closed'));
    if (!this.#session) {
      const session = this.#given ? this.#watchSession(this.#given) : this.#connect();
      // A failed connect is tried again by the next call (a new client from a URL; the user's client may connect later).
      session.catch(() => {
        if (this.#session === session) this.#session = undefined;
      });
      this.#session = session;
    }
    return this.#session;
  }

  /** Whether the manager is open and its live session is `sessionId` (a session that ended took its znodes with it). */
  async holds(sessionId: string): Promise<boolean> {
    if (this.#closed) return false;
    const session = await this.#session?.catch(() => undefined);
    return session?.id === sessionId;
  }

  /** Whether the manager is open and has a session (connected or reconnecting), without making one. */
  async hasSession(): Promise<boolean> {
    if (this.#closed || !this.#session) return false;
    return (await this.#session.catch(() => undefined)) !== undefined;
  }

  /** Calls `listener` with the id of each session that expires; returns a function that stops it. */
  onExpiry(listener: (sessionId: string) => void): () => void {
    this.#expiry.add(listener);
    return () => this.#expiry.delete(listener);
  }

  async #connect(): Promise<Session> {
    let zk: typeof import('node-zookeeper-client');
    try {
      zk = (await import('node-zookeeper-client')).default;
    } catch {
      throw new InvalidArgumentError(`${this.name} needs the node-zookeeper-client package: npm install node-zookeeper-client`);
    }
    const client = zk.createClient(this.#connectionString!, { sessionTimeout: this.#sessionTimeout, spinDelay: 200, retries: 0 });
    guardFraming(client);
    client.connect();
    return this.#watchSession(client).catch((error: unknown) => {
      client.close();
      throw error;
    });
  }

  /** Resolves once `client` is connected; follows its session's expiry from then on. */
  async #watchSession(client: Client): Promise<Session> {
    let onState: (() => void) | undefined;
    const session = await withDeadline(
      new Promise<Session>((resolve, reject) => {
        const check = (): void => {
          const state = client.getState().name;
          if (state === 'SYNC_CONNECTED' || state === 'CONNECTED_READ_ONLY')
            resolve({ client, id: client.getSessionId().toString('hex'), timeout: client.getSessionTimeout() });
          if (state === 'AUTH_FAILED') reject(new NodeError(this.name, 'authentication failed'));
          if (state === 'EXPIRED') reject(new NodeError(this.name, 'the session has expired'));
        };
        onState = check;
        client.on('state', check);
        check();
      }),
      this.#timeout,
      () => new NodeError(this.name, `could not connect within ${this.#timeout} ms`),
    ).finally(() => client.removeListener('state', onState!));
    const onExpiry = (state: { name: string }): void => {
      if (state.name !== 'EXPIRED') return;
      for (const listener of this.#expiry) listener(session.id);
      // Ours: the next call makes a new client. The user's client stays expired: calls fail, naming it.
      if (this.#owned) {
        client.close();
        if (!this.#closed) this.#session = undefined;
      }
    };
    // Closed while connecting: nothing to follow (close() has already taken off what it found).
    if (this.#closed) return session;
    client.on('state', onExpiry);
    this.#unwatchSession = () => client.removeListener('state', onExpiry);
    return session;
  }

  /**
   * Creates the znode `path` (persistent, empty): a queue's root. Already there (another manager made it) is fine.
   */
  async createRoot(path: string): Promise<void> {
    await this.#unless(
      [NODE_EXISTS],
      undefined,
      this.#call('create a root', (c, done) => c.create(path, (error) => done(error))),
    );
  }

  /**
   * Our znode in every place's queue, ephemeral and sequential, holding `data`, and the queue's own znode
   * (persistent, empty) before it where `withQueue`: all in one write, all or none. One plain create when
   * there is one znode to make (less work for the ensemble than a one-op transaction). Resolves with the
   * paths created (their sequence numbers appended) and, for each queue made with them, the write's zxid
   * (read from the stat of an empty setData of the queue in the same transaction: the create answers only
   * with a path), or with the first thing that made the write fail: a queue missing, a queue made with it
   * that existed already, or the root missing under a queue made with it.
   */
  async enqueue(places: readonly Place[], data: Buffer): Promise<Enqueued> {
    // The queue's own znode, our znode in it, or the setData whose stat dates a queue made with our znode.
    type Op = { readonly queue: string; readonly node?: string; readonly dating?: true };
    const ops: Op[] = places.flatMap((p) =>
      p.withQueue
        ? [{ queue: p.queue }, { queue: p.queue, node: p.node }, { queue: p.queue, dating: true as const }]
        : [{ queue: p.queue, node: p.node }],
    );
    const failed = (op: Op | undefined, code: number | undefined): Enqueued | undefined => {
      if (!op || op.dating) return undefined;
      if (op.node && code === NO_NODE) return { missing: op.queue };
      if (!op.node && code === NODE_EXISTS) return { exists: op.queue };
      if (!op.node && code === NO_NODE) return { rootMissing: op.queue.slice(0, op.queue.lastIndexOf('/')) };
      return undefined;
    };
    return this.#call<Enqueued>('enqueue', (c, done) => {
      const [only] = ops;
      if (ops.length === 1 && only?.node)
        return c.create(only.node, data, EPHEMERAL_SEQUENTIAL, (error, path) => {
          const why = error ? failed(only, codeOf(error)) : undefined;
          if (why || !error) done(null, why ?? { paths: [path], madeAt: [undefined] });
          else done(error);
        });
      const tx = c.transaction();
      for (const op of ops) {
        if (op.node) tx.create(op.node, data, EPHEMERAL_SEQUENTIAL);
        else if (op.dating) tx.setData(op.queue, Buffer.alloc(0), -1);
        else tx.create(op.queue, Buffer.alloc(0), PERSISTENT);
      }
      tx.commit((error, results?: Array<{ path?: string; err?: number; stat?: Stat }>) => {
        if (!error) {
          const stat = (queue: string): Stat | undefined => results![ops.findIndex((op) => op.dating && op.queue === queue)]?.stat;
          return done(null, {
            paths: ops.flatMap((op, i) => (op.node ? [results![i]!.path!] : [])),
            madeAt: places.map((p) => (p.withQueue ? zxid(stat(p.queue)!.pzxid) : undefined)),
          });
        }
        // A failed transaction answers every op: the one that failed with its code, the others OK or "not run".
        const at = results?.findIndex((r) => r.err !== undefined && r.err !== OK) ?? -1;
        const why = failed(ops[at], results?.[at]?.err);
        if (why) done(null, why);
        else done(error);
      });
    });
  }

  /** The znode's stat, or null when it does not exist. With `onChange`, a one-shot watch is left on it. */
  exists(path: string, onChange?: () => void): Promise<Stat | null> {
    return this.#call('read a znode', (c, done) => (onChange ? c.exists(path, onChange, done) : c.exists(path, done)));
  }

  /** The children's names, or null when the parent does not exist. With `onChange`, a one-shot watch on the list. */
  children(path: string, onChange?: () => void): Promise<string[] | null> {
    return this.#unless(
      [NO_NODE],
      null,
      this.#call<string[]>('read a queue', (c, done) => (onChange ? c.getChildren(path, onChange, done) : c.getChildren(path, done))),
    );
  }

  /**
   * The children's names and the queue's `pzxid` (the zxid of the last child created or deleted in it: its
   * stat comes with the list), or null when the queue does not exist. With `onChange`, a one-shot watch.
   */
  list(path: string, onChange?: () => void): Promise<{ names: string[]; pzxid: bigint } | null> {
    return this.#unless(
      [NO_NODE],
      null,
      this.#call('read a queue', (c, done) => {
        const answer = (error: unknown, names?: string[], stat?: Stat): void =>
          done(error, error ? undefined : { names: names ?? [], pzxid: zxid(stat!.pzxid) });
        if (onChange) c.getChildren(path, onChange, answer);
        else c.getChildren(path, answer);
      }),
    );
  }

  /** The znode's data and stat, or null when it does not exist. */
  read(path: string): Promise<{ data: string; stat: Stat } | null> {
    return this.#unless(
      [NO_NODE],
      null,
      this.#call('read a znode', (c, done) =>
        c.getData(path, (error, data, stat) => done(error, error ? undefined : { data: data?.toString() ?? '', stat })),
      ),
    );
  }

  /** Deletes the znode; false when it was not there. */
  remove(path: string): Promise<boolean> {
    return this.#unless(
      [NO_NODE],
      false,
      this.#call('delete a znode', (c, done) => c.remove(path, -1, (error) => done(error, true))),
    );
  }

  /** Deletes the znode if it has no children (a queue nobody is in): what we keep stays bounded. Whether it did. */
  removeIfEmpty(path: string): Promise<boolean> {
    return this.#unless(
      [NOT_EMPTY, NO_NODE],
      false,
      this.#call('delete a queue', (c, done) => c.remove(path, -1, (error) => done(error, true))),
    );
  }

  /** `call`'s result, or `fallback` when ZooKeeper answered with one of `codes` (no such znode, not empty). */
  async #unless<T, F>(codes: readonly number[], fallback: F, call: Promise<T>): Promise<T | F> {
    try {
      return await call;
    } catch (error) {
      if (codes.includes(codeOf((error as NodeError).cause) ?? 0)) return fallback;
      throw error;
    }
  }

  /** Stops following the session, and closes the client if the manager made it. */
  async close(): Promise<void> {
    this.#closed = true;
    // A user's client outlives the manager: it keeps no listener of ours (nor the manager, through it).
    this.#unwatchSession?.();
    if (!this.#owned) return;
    const session = await this.#session?.catch(() => undefined);
    session?.client.close();
  }

  /** One call on the live session, bounded by the deadline; a call that outlives it drops the connection. */
  async #call<T>(what: string, run: (client: Client, done: (error: unknown, result?: T) => void) => void): Promise<T> {
    const { client } = await this.session();
    try {
      return await withDeadline(
        new Promise<T>((resolve, reject) => run(client, (error, result) => (error ? reject(error) : resolve(result as T)))),
        this.#timeout,
        () => {
          // The server may hang without closing the connection; the client would wait on it forever. Drop it:
          // the client reconnects to another server, with the same session, within the session's timeout.
          (client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager?.socket?.destroy();
          return new NodeTimeoutError(this.name, this.#timeout);
        },
      );
    } catch (error) {
      if (error instanceof NodeError) throw error;
      const code = codeOf(error);
      if (code === NODE_EXISTS) throw new NodeError(this.name, `could not ${what}: the znode exists`, { cause: error });
      throw new NodeError(this.name, `could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
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

/** A stat's 8-byte zxid as a bigint. */
export const zxid = (bytes: Buffer): bigint => bytes.readBigInt64BE(0);
