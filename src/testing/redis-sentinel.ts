// Throw-away Redis primary + replicas watched by Sentinel, for tests, the demo and users' own tests: a real
// automatic failover on loopback. Every process (data node or sentinel) is a LocalRedisNode on its own free
// port with its own temp dir, signalled only through its own PID.
import net from 'node:net';
import { HOST, sleep } from './processes.js';
import { findRedisServer, startRedisNode, type LocalRedisNode, type SentinelNodeOptions } from './redis-nodes.js';

/** Options of `startRedisSentinel`. */
export interface StartRedisSentinelOptions {
  /** replicas of the primary, default 1 */
  replicas?: number;
  /** Sentinel processes, default 3; the quorum (sentinels that must agree the primary is down) is a majority */
  sentinels?: number;
  /** Sentinel's `down-after-milliseconds`: how long the primary may not answer before it counts as down; default 1000 */
  downAfterMs?: number;
  /**
   * Sentinel's `failover-timeout`, default 10_000: a failover that did not finish (a split vote among the
   * sentinels) is tried again after twice this. Sentinel also points a replica that replicates from an
   * address other than the primary's back at the primary once this long has passed.
   */
  failoverTimeoutMs?: number;
  /** the name the sentinels monitor the primary under (ioredis's `name`), default `'fencelock'` */
  name?: string;
  /** ms to wait until replicas are in sync and every sentinel knows them and the other sentinels, default 20_000 */
  startTimeout?: number;
  /** extra redis-server arguments for the primary and the replicas (not the sentinels) */
  args?: string[];
}

type Reply = string | number | null | Error | Reply[];

/** Parses one RESP reply from `buf` at `pos`: [reply, next position], or undefined when more bytes are needed. */
function parseReply(buf: string, pos: number): [Reply, number] | undefined {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return undefined;
  const line = buf.slice(pos + 1, eol);
  const next = eol + 2;
  switch (buf[pos]) {
    case '+':
      return [line, next];
    case '-':
      return [new Error(line), next];
    case ':':
      return [Number(line), next];
    case '$': {
      const len = Number(line);
      if (len < 0) return [null, next];
      return buf.length < next + len + 2 ? undefined : [buf.slice(next, next + len), next + len + 2];
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return [null, next];
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at);
        if (!item) return undefined;
        items.push(item[0]);
        at = item[1];
      }
      return [items, at];
    }
    default:
      return [new Error(`unexpected reply: ${JSON.stringify(buf.slice(pos, pos + 40))}`), buf.length];
  }
}

/**
 * @internal One command over a raw socket (readiness must not depend on the client libraries under test):
 * its reply, or undefined when the server does not answer within `timeoutMs`.
 */
export function redisCommand(port: number, args: readonly string[], timeoutMs = 1_000): Promise<Reply | undefined> {
  return new Promise((resolve) => {
    let buf = '';
    const sock = net.connect(port, HOST);
    const done = (r: Reply | undefined) => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done(undefined));
    sock.on('error', () => done(undefined));
    sock.on('connect', () => sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const parsed = parseReply(buf, 0);
      if (parsed) done(parsed[0]);
    });
  });
}

/** `INFO replication` of the node on `port` as a map; undefined when it does not answer. */
async function replicationInfo(port: number): Promise<Map<string, string> | undefined> {
  const reply = await redisCommand(port, ['INFO', 'replication']);
  if (typeof reply !== 'string') return undefined;
  return new Map(reply.split('\r\n').flatMap((l) => (l.includes(':') ? [l.split(':', 2) as [string, string]] : [])));
}

/** Sentinel's flat [key, value, key, value…] records as maps. */
const records = (reply: Reply | undefined): Array<Map<string, string>> =>
  Array.isArray(reply)
    ? reply.filter(Array.isArray).map((r) => {
        const m = new Map<string, string>();
        for (let i = 0; i + 1 < r.length; i += 2) m.set(String(r[i]), String(r[i + 1]));
        return m;
      })
    : [];

/** A primary with replicas, watched by Sentinel processes; stopped as one, also via `await using`. */
export class LocalRedisSentinel implements AsyncDisposable {
  /** undefined: the first node, not yet confirmed by a sentinel */
  #known: LocalRedisNode | undefined;

  /** @internal use startRedisSentinel() */
  constructor(
    /** the name the sentinels monitor the primary under: ioredis's `name` */
    readonly name: string,
    /** every data node, the first primary first, then the replicas, in start order */
    readonly nodes: readonly LocalRedisNode[],
    /** the Sentinel processes */
    readonly sentinelNodes: readonly LocalRedisNode[],
  ) {}

  get #primary(): LocalRedisNode {
    return this.#known ?? (this.nodes[0] as LocalRedisNode);
  }

  /**
   * The primary as the sentinels last reported it (at start, in waitForFailover() and currentPrimary()).
   * After a crash and before a failover has been waited for, this is still the node that crashed.
   */
  get primary(): LocalRedisNode {
    return this.#primary;
  }

  /** the data nodes other than `primary` (running or not) */
  get replicas(): LocalRedisNode[] {
    return this.nodes.filter((n) => n !== this.#primary);
  }

  /** every sentinel's address, as ioredis takes them: `new Redis({ sentinels, name })` */
  get sentinels(): Array<{
    /** always 127.0.0.1 */
    host: string;
    /** the sentinel's port */
    port: number;
  }> {
    return this.sentinelNodes.map((s) => ({ host: s.host, port: s.port }));
  }

  /** The port each running sentinel reports for the primary (`SENTINEL get-master-addr-by-name`); undefined where one does not answer. */
  async primaryPorts(timeoutMs = 1_000): Promise<Array<number | undefined>> {
    return Promise.all(
      this.sentinelNodes.map(async (s) => {
        if (!s.isRunning() || s.paused) return undefined;
        const reply = await redisCommand(s.port, ['SENTINEL', 'get-master-addr-by-name', this.name], timeoutMs);
        return Array.isArray(reply) && reply.length === 2 ? Number(reply[1]) : undefined;
      }),
    );
  }

  /** Asks the sentinels for the primary: the node a majority of the answering ones report (and `primary` becomes it). */
  async currentPrimary(): Promise<LocalRedisNode | undefined> {
    const ports = (await this.primaryPorts()).filter((p): p is number => p !== undefined);
    const port = ports.find((p) => ports.filter((q) => q === p).length * 2 > ports.length);
    const node = this.nodes.find((n) => n.port === port);
    if (node) this.#known = node;
    return node;
  }

  /**
   * Resolves with the new primary once every answering sentinel reports one other than `oldPrimaryPort` (the
   * same one) and that node says it is a master, so a client asking any sentinel reaches it. Polls every 50 ms,
   * at most `timeoutMs` (default 30_000).
   */
  async waitForFailover(oldPrimaryPort: number, timeoutMs = 30_000): Promise<LocalRedisNode> {
    const deadline = Date.now() + timeoutMs;
    let last: Array<number | undefined> = [];
    while (Date.now() < deadline) {
      last = await this.primaryPorts(Math.min(1_000, Math.max(1, deadline - Date.now())));
      const answered = last.filter((p): p is number => p !== undefined);
      const port = answered[0];
      const node = this.nodes.find((n) => n.port === port);
      if (
        port !== undefined &&
        port !== oldPrimaryPort &&
        node &&
        answered.every((p) => p === port) &&
        (await replicationInfo(port))?.get('role') === 'master'
      ) {
        this.#known = node;
        return node;
      }
      await sleep(50);
    }
    throw new Error(
      `no failover away from port ${oldPrimaryPort} within ${timeoutMs} ms: the sentinels report ports ${JSON.stringify(last)}`,
    );
  }

  /**
   * Resolves once every running replica of `primary` reports `master_link_status:up` and has caught up
   * with the primary's replication offset at the time of the call (polled, at most `timeoutMs`).
   */
  async waitForSync(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const primaryInfo = await replicationInfo(this.#primary.port);
    const target = Number(primaryInfo?.get('master_repl_offset') ?? 0);
    let waiting: string[] = [];
    while (Date.now() < deadline) {
      const running = this.replicas.filter((r) => r.isRunning() && !r.paused);
      const infos = await Promise.all(running.map((r) => replicationInfo(r.port)));
      waiting = running
        .filter((_, i) => {
          const info = infos[i];
          return (
            info?.get('master_link_status') !== 'up' ||
            Number(info.get('master_port')) !== this.#primary.port ||
            Number(info.get('slave_repl_offset') ?? -1) < target
          );
        })
        .map((r) => r.url);
      if (waiting.length === 0) return;
      await sleep(50);
    }
    throw new Error(`replicas not in sync with ${this.#primary.url} within ${timeoutMs} ms: ${waiting.join(', ')}`);
  }

  /** Resolves once every running sentinel knows every running replica (not down) and every other running sentinel. */
  async waitForSentinels(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let missing: string[] = [];
    while (Date.now() < deadline) {
      const sentinels = this.sentinelNodes.filter((s) => s.isRunning() && !s.paused);
      const replicas = this.replicas.filter((r) => r.isRunning() && !r.paused).map((r) => r.port);
      const views = await Promise.all(
        sentinels.map(async (s) => {
          const known = records(await redisCommand(s.port, ['SENTINEL', 'replicas', this.name]));
          const peers = records(await redisCommand(s.port, ['SENTINEL', 'sentinels', this.name]));
          const up = known.filter((r) => !/s_down|o_down|disconnected/.test(r.get('flags') ?? '')).map((r) => Number(r.get('port')));
          const lacks = replicas.filter((p) => !up.includes(p)).map((p) => `replica ${p}`);
          if (peers.length < sentinels.length - 1) lacks.push(`${sentinels.length - 1 - peers.length} sentinel(s)`);
          return lacks.length ? `sentinel ${s.port} lacks ${lacks.join(', ')}` : undefined;
        }),
      );
      missing = views.filter((v): v is string => v !== undefined);
      if (missing.length === 0) return;
      await sleep(50);
    }
    throw new Error(`the sentinels did not see the whole setup within ${timeoutMs} ms: ${missing.join('; ')}`);
  }

  /** Stops every process (by its own pid), the sentinels first, and removes their directories; safe to call twice. */
  async stop(): Promise<void> {
    await Promise.all(this.sentinelNodes.map((s) => s.stop()));
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** `stop()`, for `await using setup = await startRedisSentinel()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

function checkInteger(value: number, what: string, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${what} must be an integer in [${min}, ${max}], got ${value}`);
  return value;
}

/**
 * Start a primary, `replicas` replicas (`--replicaof` the primary) and `sentinels` Sentinel processes on free
 * loopback ports (never 6379 or 26379), and wait until the replicas are in sync and every sentinel sees the
 * replicas and the other sentinels, so a failover can happen. Call stop() when done; if starting fails,
 * whatever was started is stopped.
 */
export async function startRedisSentinel(opts: StartRedisSentinelOptions = {}): Promise<LocalRedisSentinel> {
  const replicaCount = checkInteger(opts.replicas ?? 1, 'replicas', 1, 9);
  const sentinelCount = checkInteger(opts.sentinels ?? 3, 'sentinels', 1, 9);
  const downAfterMs = checkInteger(opts.downAfterMs ?? 1_000, 'downAfterMs', 100, 600_000);
  const failoverTimeoutMs = checkInteger(opts.failoverTimeoutMs ?? 10_000, 'failoverTimeoutMs', 1_000, 3_600_000);
  const startTimeout = checkInteger(opts.startTimeout ?? 20_000, 'startTimeout', 1, 600_000);
  const { name = 'fencelock', args = [] } = opts;
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new RangeError(`name must be letters, digits, '.', '_' or '-', got ${JSON.stringify(name)}`);
  findRedisServer(); // fail fast, before creating temp dirs

  // A replica is served at once, not after the default 5 s wait for more replicas to join a diskless sync.
  const dataArgs = ['--repl-diskless-sync-delay', '0', ...args];
  const nodes: LocalRedisNode[] = [];
  const sentinelNodes: LocalRedisNode[] = [];
  const setup = new LocalRedisSentinel(name, nodes, sentinelNodes);
  try {
    const primary = await startRedisNode({ args: dataArgs });
    nodes.push(primary);
    const replicas = await Promise.allSettled(
      Array.from({ length: replicaCount }, () => startRedisNode({ args: [...dataArgs, '--replicaof', HOST, String(primary.port)] })),
    );
    for (const r of replicas) if (r.status === 'fulfilled') nodes.push(r.value);
    const failed = replicas.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    await setup.waitForSync(startTimeout);

    const quorum = Math.floor(sentinelCount / 2) + 1;
    const sentinelConfig: SentinelNodeOptions['sentinelConfig'] = [
      `sentinel monitor ${name} ${HOST} ${primary.port} ${quorum}`,
      `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
      `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
      `sentinel parallel-syncs ${name} 1`,
    ];
    const sentinelOpts: SentinelNodeOptions = { sentinelConfig };
    const started = await Promise.allSettled(Array.from({ length: sentinelCount }, () => startRedisNode(sentinelOpts)));
    for (const s of started) if (s.status === 'fulfilled') sentinelNodes.push(s.value);
    const failedSentinel = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failedSentinel) throw failedSentinel.reason;
    await setup.waitForSentinels(startTimeout);
    if ((await setup.currentPrimary()) !== primary) throw new Error(`the sentinels do not report ${primary.url} as the primary`);
    return setup;
  } catch (error) {
    await setup.stop();
    throw error;
  }
}
