// Throw-away redis-server processes for tests, the demo and users' own tests.
// Every node owns a random loopback port and a temp dir, and is only ever
// signalled through its own PID, so it can never disturb a Redis it did not start.
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, isReservedPort, releasePort, reservePort } from './ports.js';
import { findBinary, HOST, isAlive, LocalServer, sleep } from './processes.js';

/** Options of `startRedisNode(s)`: how each throw-away redis-server is started. */
export interface StartRedisOptions {
  /** extra redis-server arguments, e.g. ['--requirepass', 'x'] */
  args?: string[];
  /** persist data across restart() (appendonly); default false: no persistence, like a cache node */
  persistence?: boolean;
  /**
   * wrap the server command, e.g. ['env', 'LD_PRELOAD=...libfaketime.so.1', 'FAKETIME=+0 x1.5'] (see test/support/faults/faketime.ts).
   * The wrapper must exec the server (`env VAR=... redis-server` does; the `faketime` command forks, so use its LD_PRELOAD form), or signals reach the wrapper, not Redis.
   */
  commandPrefix?: string[];
  /** ms to wait for PONG, default 10_000 */
  startTimeout?: number;
  /** a fixed port instead of a free one (startRedisNodes: the first of consecutive ports); never 6379 */
  port?: number;
  /**
   * Run as a Redis Cluster node (`--cluster-enabled yes`, its nodes.conf in the node's temp dir) and keep
   * the cluster bus port, port + 10000, free as well, so ports are at most 55535. The node starts alone:
   * startRedisCluster() (redis-cluster.ts) joins such nodes into a cluster. restart() keeps nodes.conf,
   * so a restarted node rejoins its cluster under the same node ID, with or without its data.
   */
  cluster?: boolean;
}

/**
 * @internal what startRedisSentinel (redis-sentinel.ts) adds: the node runs as a Sentinel
 * (`redis-server <dir>/sentinel.conf --sentinel`), the file written from these lines on its first start and
 * kept across restart(), where Sentinel records what it learned (the current primary, the other sentinels).
 */
export interface SentinelNodeOptions extends StartRedisOptions {
  sentinelConfig?: readonly string[];
}

/** Redis Cluster's node-to-node bus listens on the client port + 10000. */
export const CLUSTER_BUS_OFFSET = 10_000;

/** Thrown when no redis-server binary can be found, so the fix is in the message rather than in an ENOENT. */
export class RedisServerNotFoundError extends Error {
  constructor(detail: string) {
    super(
      `${detail}. The fencelock test helpers run a real redis-server: install it ` +
        '(Debian/Ubuntu: `sudo apt-get install -y redis-server`, macOS: `brew install redis`) ' +
        'or point REDIS_SERVER at the binary.',
    );
    this.name = 'RedisServerNotFoundError';
  }
}

/** @internal the redis-server binary: $REDIS_SERVER, else the first on PATH. */
export function findRedisServer(): string {
  const { file, fromEnv } = findBinary('REDIS_SERVER', 'redis-server');
  if (file) return file;
  throw new RedisServerNotFoundError(fromEnv ? `REDIS_SERVER=${fromEnv} is not an executable file` : 'redis-server was not found on PATH');
}

/** One PING over a raw socket: readiness must not depend on the client libraries under test. */
function ping(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    let reply = '';
    const sock = net.connect(port, HOST);
    const done = (r: string) => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done(''));
    sock.on('error', () => done(''));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      reply += d.toString('latin1');
      if (reply.includes('\r\n')) done(reply.trim());
    });
  });
}

async function logTail(dir: string): Promise<string> {
  const parts = await Promise.all(['redis.log', 'stderr.log'].map((f) => readFile(path.join(dir, f), 'utf8').catch(() => '')));
  return parts.join('\n').trim().split('\n').slice(-15).join('\n');
}

/** A redis-server child process the tests can crash, hang and bring back at will. */
export class LocalRedisNode extends LocalServer {
  /** always loopback: 127.0.0.1 */
  readonly host = HOST;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  #stopped = false;

  /** @internal use startRedisNode() */
  constructor(
    /** a free loopback port (never 6379) */
    readonly port: number,
    /** its temporary working directory (log, and data when persistence is on) */
    readonly dir: string,
    private readonly opts: SentinelNodeOptions,
  ) {
    super(`redis node redis://${HOST}:${port}`);
    this.url = `redis://${HOST}:${port}`;
    reservePort(port);
    if (opts.cluster) reservePort(port + CLUSTER_BUS_OFFSET);
  }

  /**
   * Crash and bring back on the same port, as clients reconnecting to "the same node" expect.
   * keepData defaults to `persistence`; keepData: false on a persistent node wipes its disk
   * (a node that lost its data), keepData: true needs persistence.
   */
  restart(opts: { keepData?: boolean } = {}): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error(`redis node ${this.url} was stopped`));
    const keepData = opts.keepData ?? !!this.opts.persistence;
    if (keepData && !this.opts.persistence)
      return Promise.reject(new Error('restart({ keepData: true }) needs startRedisNode({ persistence: true })'));
    return this.serially(async () => {
      await this.process.kill();
      if (!keepData) {
        await Promise.all(['appendonlydir', 'dump.rdb'].map((f) => rm(path.join(this.dir, f), { recursive: true, force: true })));
      }
      await this.start();
    });
  }

  /** Kill and remove its temp dir; safe to call twice or from several cleanups. */
  stop(): Promise<void> {
    this.#stopped = true;
    return this.serially(async () => {
      await this.process.kill();
      releasePort(this.port);
      if (this.opts.cluster) releasePort(this.port + CLUSTER_BUS_OFFSET);
      await rm(this.dir, { recursive: true, force: true });
    });
  }

  /** @internal spawn and wait for PONG; rejects (with the log tail) if the server dies or times out. */
  async start(): Promise<void> {
    if (this.#stopped) throw new Error(`redis node ${this.url} is stopped`);
    const server = findRedisServer();
    const { args = [], persistence = false, commandPrefix = [], startTimeout = 10_000, cluster = false, sentinelConfig } = this.opts;
    const sentinel: string[] = [];
    if (sentinelConfig) {
      const conf = path.join(this.dir, 'sentinel.conf');
      // Sentinel rewrites this file as it learns: a restarted sentinel must find its own version.
      if (
        !(await access(conf).then(
          () => true,
          () => false,
        ))
      )
        await writeFile(conf, `${sentinelConfig.join('\n')}\n`);
      sentinel.push(conf, '--sentinel');
    }
    const argv = [
      ...sentinel,
      ...['--port', String(this.port), '--bind', HOST, '--dir', this.dir, '--save', ''],
      ...['--appendonly', persistence ? 'yes' : 'no', '--daemonize', 'no', '--protected-mode', 'no'],
      ...(cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(this.dir, 'nodes.conf')] : []),
      ...['--logfile', path.join(this.dir, 'redis.log'), ...args],
    ];
    const [cmd = server, ...rest] = [...commandPrefix, server, ...argv];
    const child = await this.process.start(cmd, rest, this.dir);

    const deadline = Date.now() + startTimeout;
    let foreign: Error | undefined;
    while (Date.now() < deadline) {
      if (this.process.spawnError || !isAlive(child)) break;
      const reply = await ping(this.port, Math.min(1_000, Math.max(1, deadline - Date.now())));
      // NOAUTH means it is up and answering, just password-protected via args. The answer must be its own:
      // another process's server on the same port would answer PONG before ours fails to bind it.
      if (reply === '+PONG' || reply.startsWith('-NOAUTH')) {
        try {
          if (this.process.answeredOn(this.port)) return;
        } catch (error) {
          foreign = error as Error;
          break;
        }
      }
      await sleep(20);
    }
    const spawnError = this.process.spawnError;
    const why = foreign
      ? foreign.message
      : spawnError
        ? `could not run ${cmd}: ${spawnError.message}`
        : child.exitCode === null && child.signalCode === null
          ? `no PONG within ${startTimeout} ms`
          : `exited with ${child.signalCode ?? `code ${child.exitCode}`}`;
    await this.process.kill();
    throw new Error(`redis-server on port ${this.port} failed to start: ${why}\n${await logTail(this.dir)}`);
  }
}

/** A group of nodes (e.g. for Redlock) that is stopped as one, also via `await using`. */
export class LocalRedisNodes implements AsyncDisposable {
  /** @internal use startRedisNodes() */
  constructor(
    /** the nodes, in start order */
    readonly nodes: LocalRedisNode[],
  ) {}
  /** every node's `redis://` URL: pass them to `new LockManager(urls)` */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }
  /** Stops every node (by its own pid) and removes its directory. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
  /** `stop()`, for `await using nodes = await startRedisNodes(3)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/** Start a fresh, empty redis-server on a free loopback port. Call stop() when done. */
export async function startRedisNode(opts: StartRedisOptions = {}): Promise<LocalRedisNode> {
  findRedisServer(); // fail fast, before creating temp dirs
  const maxPort = opts.cluster ? 65535 - CLUSTER_BUS_OFFSET : 65535;
  if (opts.port !== undefined && (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > maxPort || isReservedPort(opts.port))) {
    throw new RangeError(
      `port must be an integer in [1, ${maxPort}] other than a real server's default (6379, 2379, 2380, 2181, 2888, 3888), got ${opts.port}`,
    );
  }
  for (let attempt = 1; ; attempt++) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-redis-'));
    const node = new LocalRedisNode(opts.port ?? (await freePort(opts.cluster ? CLUSTER_BUS_OFFSET : undefined)), dir, opts);
    try {
      await node.start();
      return node;
    } catch (err) {
      await node.stop();
      // A server outside these helpers may bind the port between our probe and redis binding it: try another.
      if (opts.port === undefined && attempt < 5 && /Address already in use|taken twice/i.test(String(err))) continue;
      throw err;
    }
  }
}

/** Start `count` independent nodes in parallel; if any fails, the others are stopped too. */
export async function startRedisNodes(count: number, opts: StartRedisOptions = {}): Promise<LocalRedisNodes> {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, got ${count}`);
  const results = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => startRedisNode(opts.port === undefined ? opts : { ...opts, port: opts.port + i })),
  );
  const nodes = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw failed.reason;
  }
  return new LocalRedisNodes(nodes);
}
