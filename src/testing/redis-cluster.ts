// Throw-away Redis Clusters for tests: redis-server processes started with
// --cluster-enabled yes (see StartRedisOptions.cluster), joined by
// `redis-cli --cluster create`. Like the single nodes, every process is only
// ever signalled through its own PID, and the cluster is watched over raw
// sockets, never through the client libraries under test.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { clusterKeySlot } from '../redis/keys.js';
import { findRedisServer, startRedisNodes, type LocalRedisNode, type StartRedisOptions } from './redis-nodes.js';

/** Options of `startRedisCluster`: how many masters and replicas, and the redis-server options of each node. */
export interface StartRedisClusterOptions extends Omit<StartRedisOptions, 'port' | 'cluster'> {
  /** masters, each serving an equal share of the 16384 slots; at least 3 (redis-cli's minimum); default 3 */
  masters?: number;
  /** replicas of each master; default 1 */
  replicasPerMaster?: number;
  /**
   * `cluster-node-timeout` in ms, default 1000: a master unreachable this long is marked failed, and its
   * replica is promoted about one to two timeouts after the crash.
   */
  nodeTimeout?: number;
  /** ms for `redis-cli --cluster create` and for the cluster to become healthy, default 30_000 */
  readyTimeout?: number;
}

/** One node as the cluster sees it (CLUSTER NODES). */
export interface ClusterNodeInfo {
  /** the local redis-server process */
  readonly node: LocalRedisNode;
  /** the 40-character node ID */
  readonly id: string;
  /** what the cluster says it is now */
  readonly role: 'master' | 'replica';
  /** a replica's master's ID */
  readonly masterId: string | undefined;
  /** slot ranges [first, last] a master serves */
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** What `killMaster` did: which master it killed, which replica took over, and how long that took. */
export interface KillMasterResult {
  /** the master that was SIGKILLed */
  readonly killed: LocalRedisNode;
  /** the replica that took over the killed master's slots */
  readonly promoted: LocalRedisNode;
  /** ms from the SIGKILL until the replica was a master and every running node reported cluster_state:ok */
  readonly failoverMs: number;
}

const SLOTS = 16384;

/** The Cluster hash slot of a key, as `CLUSTER KEYSLOT` computes it. */
export { clusterKeySlot };
const POLL_MS = 25;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type Reply = string | number | null | Error | Reply[];

/** Parses one RESP2 reply from `buf` at `at`; undefined when incomplete. Bulk strings are decoded as UTF-8. */
function parseReply(buf: Buffer, at: number): { value: Reply; end: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[at] as number);
  const line = buf.toString('utf8', at + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, end: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let pos = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, pos);
        if (!item) return undefined;
        items.push(item.value);
        pos = item.end;
      }
      return { value: items, end: pos };
    }
    default:
      return { value: new Error(`unexpected RESP reply type ${JSON.stringify(type)}`), end: buf.length };
  }
}

/** One command over a fresh raw socket. Rejects on a connection error, a timeout, or an error reply. */
function command(port: number, args: readonly string[], timeoutMs = 1_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const sock = net.connect(port, '127.0.0.1');
    const finish = (error: Error | undefined, value?: Reply): void => {
      if (done) return;
      done = true;
      sock.destroy();
      if (error) reject(error);
      else resolve(value as Reply);
    };
    sock.setTimeout(timeoutMs, () => finish(new Error(`127.0.0.1:${port}: no reply to ${args[0]} within ${timeoutMs} ms`)));
    sock.on('error', (e) => finish(new Error(`127.0.0.1:${port}: ${e.message}`)));
    sock.on('close', () => finish(new Error(`127.0.0.1:${port}: connection closed before the reply to ${args[0]}`)));
    sock.on('connect', () => {
      const parts = args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`);
      sock.write(`*${args.length}\r\n${parts.join('')}`);
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const reply = parseReply(buf, 0);
      if (!reply) return;
      if (reply.value instanceof Error) finish(new Error(`127.0.0.1:${port}: ${args.slice(0, 2).join(' ')}: ${reply.value.message}`));
      else finish(undefined, reply.value);
    });
  });
}

async function text(port: number, args: readonly string[], timeoutMs?: number): Promise<string> {
  return String(await command(port, args, timeoutMs));
}

/** `key:value` lines of CLUSTER INFO / INFO. */
function fields(info: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) map.set(line.slice(0, i), line.slice(i + 1));
  }
  return map;
}

interface NodeLine {
  id: string;
  port: number;
  flags: Set<string>;
  masterId: string | undefined;
  slots: Array<[number, number]>;
}

function parseNodes(out: string): NodeLine[] {
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((line) => {
      const [id = '', addr = '', flags = '', master = '-', , , , , ...slotFields] = line.split(' ');
      const slots = slotFields
        .filter((s) => !s.startsWith('[')) // [slot->-importing...]: migrations, none here
        .map((s): [number, number] => {
          const [a, b = a] = s.split('-');
          return [Number(a), Number(b)];
        });
      const port = Number(addr.split('@')[0]?.split(':').pop());
      return { id, port, flags: new Set(flags.split(',')), masterId: master === '-' ? undefined : master, slots };
    });
}

function findRedisCli(): string {
  const fromEnv = process.env.REDIS_CLI;
  const candidates = fromEnv
    ? [fromEnv]
    : [
        path.join(path.dirname(findRedisServer()), 'redis-cli'),
        ...(process.env.PATH ?? '')
          .split(path.delimiter)
          .filter(Boolean)
          .map((d) => path.join(d, 'redis-cli')),
      ];
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    `${fromEnv ? `REDIS_CLI=${fromEnv} is not an executable file` : 'redis-cli was not found'}: it is needed to create a cluster`,
  );
}

/** Runs redis-cli with a deadline; the child is killed by its own PID if it overruns. */
function runCli(args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(findRedisCli(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // redis-cli --cluster reports some failures on stdout with exit code 0, hence the [ERR] check.
      if (code === 0 && !/\[ERR\]/.test(out)) resolve(out);
      else reject(new Error(`redis-cli ${args.slice(0, 2).join(' ')} failed (${signal ?? `exit code ${code}`}):\n${out.trim()}`));
    });
  });
}

/** What a poll found: `{ done: value }`, or why it is not there yet. */
type Poll<T> = { readonly done: T } | string;

/** Polls `check` every 25 ms until it is done or `timeoutMs` passes; the error names the last reason. Bounded in time and count. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<Poll<T>>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const maxChecks = Math.ceil(timeoutMs / POLL_MS) + 1;
  let why = 'no detail';
  let checks = 0;
  while (checks < maxChecks) {
    checks++;
    try {
      const r = await check();
      if (typeof r !== 'string') return r.done;
      why = r;
    } catch (e) {
      why = (e as Error).message;
    }
    if (Date.now() >= deadline) break;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (${checks} checks; last: ${why})`);
}

/**
 * A local Redis Cluster. `nodes` keeps its order for good; roles change with
 * failovers, so masters() and replicaOf() ask the cluster each time.
 */
export class LocalRedisCluster implements AsyncDisposable {
  /** @internal use startRedisCluster() */
  constructor(
    /** every redis-server of the cluster, masters and replicas, in start order (roles change with failovers) */
    readonly nodes: readonly LocalRedisNode[],
    private readonly readyTimeout: number,
  ) {}

  /** Every node's redis:// URL (any of them serves as a client's seed node). */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  /** Every node's port (in `nodes` order), e.g. for a client's seed list. */
  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  /** The cluster as each node sees itself: role, master and slots. Only running nodes. */
  async topology(): Promise<ClusterNodeInfo[]> {
    const running = this.nodes.filter((n) => n.isRunning());
    return Promise.all(
      running.map(async (node) => {
        const self = parseNodes(await text(node.port, ['CLUSTER', 'NODES'])).find((l) => l.flags.has('myself'));
        if (!self) throw new Error(`${node.url}: CLUSTER NODES has no "myself" line`);
        const role = self.flags.has('master') ? 'master' : 'replica';
        return { node, id: self.id, role, masterId: self.masterId, slots: self.slots } as const;
      }),
    );
  }

  /** Running masters that serve slots, ordered by their first slot (masters()[0] serves slot 0). */
  async masters(): Promise<LocalRedisNode[]> {
    const first = (t: ClusterNodeInfo): number => Math.min(...t.slots.map(([a]) => a));
    return (await this.topology())
      .filter((t) => t.role === 'master' && t.slots.length > 0)
      .sort((a, b) => first(a) - first(b))
      .map((t) => t.node);
  }

  /** Running replicas of `master`. */
  async replicaOf(master: LocalRedisNode): Promise<LocalRedisNode[]> {
    const all = await this.topology();
    const id = all.find((t) => t.node === master)?.id;
    if (id === undefined) throw new Error(`${master.url} is not a running node of this cluster`);
    return all.filter((t) => t.role === 'replica' && t.masterId === id).map((t) => t.node);
  }

  /** The running master that serves `key`'s slot (a string key, or a slot number). */
  async masterOf(key: string | number): Promise<LocalRedisNode> {
    const slot = typeof key === 'number' ? key : clusterKeySlot(key);
    const owner = (await this.topology()).find((t) => t.role === 'master' && t.slots.some(([a, b]) => a <= slot && slot <= b));
    if (!owner) throw new Error(`no running master serves slot ${slot}`);
    return owner.node;
  }

  /**
   * SIGKILL a master (an index into masters(), or the node) and wait, bounded by `timeout`
   * (default: the start's readyTimeout), until one of its replicas has been promoted and
   * every running node reports cluster_state:ok. Needs a replica to promote.
   */
  async killMaster(which: number | LocalRedisNode, opts: { timeout?: number } = {}): Promise<KillMasterResult> {
    const timeout = opts.timeout ?? this.readyTimeout;
    const masters = await this.masters();
    const killed = typeof which === 'number' ? masters[which] : which;
    if (!killed || !masters.includes(killed))
      throw new Error(`killMaster: ${String(typeof which === 'number' ? which : which.url)} is not a master`);
    const replicas = await this.replicaOf(killed);
    if (replicas.length === 0) throw new Error(`killMaster: ${killed.url} has no running replica to promote`);
    const started = performance.now();
    await killed.kill('SIGKILL');
    const promoted = await until(`failover of ${killed.url}`, timeout, async () => {
      const mine = await Promise.all(
        replicas.map(async (r) =>
          r.isRunning() ? parseNodes(await text(r.port, ['CLUSTER', 'NODES'])).find((l) => l.flags.has('myself')) : undefined,
        ),
      );
      const winner = replicas[mine.findIndex((l) => l?.flags.has('master') && l.slots.length > 0)];
      if (!winner) return 'no replica promoted yet';
      return (await this.unhealthy({ checkReplicas: false })) ?? { done: winner };
    });
    return { killed, promoted, failoverMs: Math.round(performance.now() - started) };
  }

  /**
   * Waits (bounded) until every running node reports cluster_state:ok with all 16384 slots served,
   * all agree on which nodes are masters, and every replica's link to its master is up. Use it after
   * restarting a killed node (it rejoins, as a replica of whoever took its slots).
   */
  async waitUntilHealthy(timeout = this.readyTimeout): Promise<void> {
    await until('cluster healthy', timeout, async () => (await this.unhealthy({ checkReplicas: true })) ?? { done: true });
  }

  /**
   * Cuts a replica off its master's writes: its replication link is dropped and every reconnect fails
   * (it is told to authenticate as a user that does not exist), while the cluster bus, and so failover,
   * keeps working. Writes acknowledged by the master from now on never reach this replica: the
   * asynchronous-replication window of a crash, made as wide as a test needs. Resolves once the
   * replica reports its link down. restoreReplication() undoes it.
   */
  async cutReplication(replica: LocalRedisNode): Promise<void> {
    const role = fields(await text(replica.port, ['INFO', 'replication'])).get('role');
    if (role !== 'slave') throw new Error(`cutReplication: ${replica.url} is not a replica (role:${role})`);
    await command(replica.port, ['CONFIG', 'SET', 'masteruser', 'fencelock-no-such-user', 'masterauth', 'x']);
    await command(replica.port, ['CLIENT', 'KILL', 'TYPE', 'master']);
    await until(`replication link of ${replica.url} down`, this.readyTimeout, async () => {
      const info = fields(await text(replica.port, ['INFO', 'replication']));
      return info.get('master_link_status') === 'down' ? { done: true } : 'link still up';
    });
  }

  /** Lets a cut replica replicate again (see cutReplication); on a node promoted meanwhile it just clears the setting. */
  async restoreReplication(replica: LocalRedisNode): Promise<void> {
    await command(replica.port, ['CONFIG', 'SET', 'masteruser', '', 'masterauth', '']);
  }

  /** Kill every node by its PID and remove their temp dirs. Safe to call twice. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** `stop()`, for `await using cluster = await startRedisCluster()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /** Why the cluster is not healthy yet, or undefined when it is. */
  private async unhealthy({ checkReplicas }: { checkReplicas: boolean }): Promise<string | undefined> {
    const running = this.nodes.filter((n) => n.isRunning());
    const views = await Promise.all(
      running.map(async (n) => ({
        n,
        info: fields(await text(n.port, ['CLUSTER', 'INFO'])),
        nodes: parseNodes(await text(n.port, ['CLUSTER', 'NODES'])),
      })),
    );
    let masterSet: string | undefined;
    for (const { n, info, nodes } of views) {
      if (info.get('cluster_state') !== 'ok') return `${n.url}: cluster_state:${info.get('cluster_state')}`;
      if (info.get('cluster_slots_ok') !== String(SLOTS)) return `${n.url}: cluster_slots_ok:${info.get('cluster_slots_ok')}`;
      const masters = nodes
        .filter((l) => l.flags.has('master') && l.slots.length > 0 && !l.flags.has('fail') && !l.flags.has('fail?'))
        .map((l) => l.id)
        .sort()
        .join(',');
      masterSet ??= masters;
      if (masters !== masterSet) return `${n.url} sees other masters than ${(views[0] as (typeof views)[0]).n.url}`;
      if (checkReplicas) {
        for (const other of running) {
          const line = nodes.find((l) => l.port === other.port);
          if (!line) return `${n.url} does not know ${other.url} yet`;
          if (line.flags.has('fail') || line.flags.has('fail?')) return `${n.url} still flags ${other.url} ${[...line.flags].join(',')}`;
        }
      }
    }
    if (checkReplicas) {
      for (const { n, nodes } of views) {
        const self = nodes.find((l) => l.flags.has('myself'));
        if (!self?.flags.has('slave')) continue;
        const repl = fields(await text(n.port, ['INFO', 'replication']));
        if (repl.get('master_link_status') !== 'up') return `${n.url}: replica link ${repl.get('master_link_status')}`;
      }
    }
    return undefined;
  }
}

/**
 * Start a Redis Cluster of `masters * (1 + replicasPerMaster)` fresh nodes on free loopback ports
 * (each with its cluster bus port, +10000, free too), join them with `redis-cli --cluster create`,
 * and wait until it is healthy. Needs redis-cli next to redis-server, on PATH, or in $REDIS_CLI.
 * Call stop() when done; if starting fails, whatever was started is stopped.
 */
export async function startRedisCluster(opts: StartRedisClusterOptions = {}): Promise<LocalRedisCluster> {
  const { masters = 3, replicasPerMaster = 1, nodeTimeout = 1_000, readyTimeout = 30_000, args = [], ...nodeOpts } = opts;
  if (!Number.isInteger(masters) || masters < 3)
    throw new RangeError(`masters must be an integer >= 3 (redis-cli's minimum), got ${masters}`);
  if (!Number.isInteger(replicasPerMaster) || replicasPerMaster < 0)
    throw new RangeError(`replicasPerMaster must be a non-negative integer, got ${replicasPerMaster}`);
  if (!Number.isInteger(nodeTimeout) || nodeTimeout < 1) throw new RangeError(`nodeTimeout must be a positive integer, got ${nodeTimeout}`);
  findRedisCli(); // fail fast, before starting servers
  const group = await startRedisNodes(masters * (1 + replicasPerMaster), {
    ...nodeOpts,
    cluster: true,
    // A replica's full sync would otherwise wait 5 s (diskless sync delay) for more replicas to join it.
    args: ['--cluster-node-timeout', String(nodeTimeout), '--repl-diskless-sync-delay', '0', ...args],
  });
  const cluster = new LocalRedisCluster(group.nodes, readyTimeout);
  try {
    await runCli(
      [
        '--cluster',
        'create',
        ...group.nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      readyTimeout,
    );
    await cluster.waitUntilHealthy();
    const roles = await cluster.topology();
    const found = roles.filter((t) => t.role === 'master').length;
    if (found !== masters) throw new Error(`expected ${masters} masters after cluster create, found ${found}`);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}
