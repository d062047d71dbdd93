// Throw-away etcd clusters for tests, the demo and users' own tests: real `etcd` processes, each on its own
// free loopback client and peer ports with a temp data dir, signalled only through their own PIDs.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, releasePort } from './ports.js';
import { findBinary, HOST, LocalServer, sleep } from './processes.js';

/** Options of `startEtcdCluster`. */
export interface StartEtcdOptions {
  /** members of the cluster, default 3 (an odd number keeps a majority through one loss) */
  members?: number;
  /** ms to wait until the cluster is healthy (has a leader), default 20_000 */
  startTimeout?: number;
  /** extra `etcd` arguments for every member */
  args?: string[];
}

/** Thrown when no etcd binary can be found, so the fix is in the message rather than in an ENOENT. */
export class EtcdNotFoundError extends Error {
  constructor(detail: string) {
    super(
      `${detail}. The fencelock etcd helpers run a real etcd: install it ` +
        '(Debian/Ubuntu: `sudo apt-get install -y etcd-server`, macOS: `brew install etcd`) or point ETCD at the binary.',
    );
    this.name = 'EtcdNotFoundError';
  }
}

/** @internal the etcd binary: $ETCD, else the first on PATH. */
export function findEtcd(): string {
  const { file, fromEnv } = findBinary('ETCD', 'etcd');
  if (file) return file;
  throw new EtcdNotFoundError(fromEnv ? `ETCD=${fromEnv} is not an executable file` : 'etcd was not found on PATH');
}

/** One member's answer to `/v3/maintenance/status` (the gRPC gateway; ids are uint64 as decimal strings). */
interface MemberStatus {
  readonly header?: { readonly member_id?: string };
  readonly leader?: string;
}

/** A POST to a member's gRPC gateway; undefined when it does not answer (down, paused, no leader yet). */
async function gateway<T>(clientUrl: string, route: string, timeoutMs: number, body: object = {}): Promise<T | undefined> {
  try {
    const res = await fetch(`${clientUrl}${route}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? ((await res.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A membership change through `peer`'s gateway, tried again while etcd refuses it for a cluster that is still
 * settling (a leader election, a member just removed); bounded by `timeoutMs`.
 */
async function reconfigure(peer: LocalEtcdMember, route: string, body: object, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${peer.clientUrl}${route}`, {
        method: 'POST',
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      });
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (error) {
      last = String(error);
    }
    await sleep(200);
  }
  throw new Error(`etcd ${route} through ${peer.name} failed within ${timeoutMs} ms: ${last}`);
}

/** An etcd member process the tests can crash, hang and bring back with its data. */
export class LocalEtcdMember extends LocalServer {
  /** `http://127.0.0.1:<client port>`: what clients connect to */
  readonly clientUrl: string;
  /** `http://127.0.0.1:<peer port>`: what the other members connect to */
  readonly peerUrl: string;
  #stopped = false;

  /** @internal use startEtcdCluster() */
  constructor(
    /** its name in the cluster (`m0`, `m1`, …) */
    readonly name: string,
    /** its free loopback port for clients */
    readonly clientPort: number,
    /** its free loopback port for the other members */
    readonly peerPort: number,
    /** its temporary directory: data dir and log */
    readonly dir: string,
    private readonly initialCluster: string,
    private readonly token: string,
    private readonly args: readonly string[],
  ) {
    super(`etcd member ${name}`);
    this.clientUrl = `http://${HOST}:${clientPort}`;
    this.peerUrl = `http://${HOST}:${peerPort}`;
  }

  /** Crash and bring back on the same ports with its data: it rejoins the cluster as the same member. */
  restart(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error(`etcd member ${this.name} was stopped`));
    return this.serially(async () => {
      await this.process.kill();
      await this.spawn(true);
    });
  }

  /** Kill and remove its temp dir; safe to call twice. */
  stop(): Promise<void> {
    this.#stopped = true;
    return this.serially(async () => {
      await this.process.kill();
      releasePort(this.clientPort);
      releasePort(this.peerPort);
      await rm(this.dir, { recursive: true, force: true });
    });
  }

  /** @internal whether it answers, and whether it is the leader; undefined if it does not answer. */
  async status(timeoutMs = 1_000): Promise<{ leader: boolean } | undefined> {
    if (this.process.paused || !this.process.isRunning()) return undefined;
    const s = await gateway<MemberStatus>(this.clientUrl, '/v3/maintenance/status', timeoutMs);
    if (!s?.header?.member_id || !s.leader || s.leader === '0') return undefined;
    // Only its own answer counts (a member of another cluster on the same port is an error, said so).
    if (!this.process.answeredOn(this.clientPort)) return undefined;
    return { leader: s.leader === s.header.member_id };
  }

  /** @internal start the process; `rejoin`: its data dir holds the cluster already. */
  async spawn(rejoin: boolean): Promise<void> {
    if (this.#stopped) throw new Error(`etcd member ${this.name} is stopped`);
    const argv = [
      ...['--name', this.name, '--data-dir', path.join(this.dir, 'data')],
      ...['--listen-client-urls', this.clientUrl, '--advertise-client-urls', this.clientUrl],
      ...['--listen-peer-urls', this.peerUrl, '--initial-advertise-peer-urls', this.peerUrl],
      ...['--initial-cluster', this.initialCluster, '--initial-cluster-token', this.token],
      ...['--initial-cluster-state', rejoin ? 'existing' : 'new'],
      ...['--logger', 'zap', '--log-outputs', path.join(this.dir, 'etcd.log')],
      ...this.args,
    ];
    // A binary that cannot run shows as a member that is not running: the leader wait says so, with the logs.
    await this.process.start(findEtcd(), argv, this.dir);
  }

  /** @internal the last lines of its logs, for a start that failed */
  async logTail(): Promise<string> {
    const parts = await Promise.all(['etcd.log', 'stderr.log'].map((f) => readFile(path.join(this.dir, f), 'utf8').catch(() => '')));
    return parts.join('\n').trim().split('\n').slice(-10).join('\n');
  }
}

/** A local etcd cluster, stopped as one (also via `await using`). */
export class LocalEtcdCluster implements AsyncDisposable {
  /** @internal use startEtcdCluster() */
  constructor(
    /** the members, in start order */
    readonly members: readonly LocalEtcdMember[],
  ) {}

  /** every member's client URL (`http://127.0.0.1:<port>`), as the `etcd3` client's `hosts` takes them */
  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  /** `etcd://127.0.0.1:<port>,127.0.0.1:<port>,…`: one URL for the whole cluster */
  get url(): string {
    return `etcd://${this.members.map((m) => `${HOST}:${m.clientPort}`).join(',')}`;
  }

  /** The current leader, asked of every running member; undefined while there is none (an election). */
  async leader(): Promise<LocalEtcdMember | undefined> {
    const statuses = await Promise.all(this.members.map((m) => m.status()));
    return this.members.find((_, i) => statuses[i]?.leader === true);
  }

  /** Resolves once a member reports itself leader, within `timeoutMs`. */
  async waitForLeader(timeoutMs = 20_000): Promise<LocalEtcdMember> {
    const deadline = Date.now() + timeoutMs;
    // Bounded by the deadline; each pass asks every member once (1 s timeout each, in parallel).
    while (Date.now() < deadline) {
      const leader = await this.leader();
      if (leader) return leader;
      const running = this.members.filter((m) => m.isRunning()).length;
      if (running <= this.members.length / 2)
        throw new Error(`only ${running} of ${this.members.length} etcd members are running: no majority`);
      await sleep(50);
    }
    throw new Error(`no etcd leader within ${timeoutMs} ms`);
  }

  /**
   * `member` crashes (SIGKILL), loses its data dir, and comes back empty as a new member on the same ports:
   * removed from the cluster and added again through a running member (etcd refuses an empty data dir under
   * the old member id), then it catches up by Raft. Resolves once the cluster has a leader again.
   */
  async restartEmpty(member: LocalEtcdMember, timeoutMs = 20_000): Promise<void> {
    await member.kill();
    const peer = this.members.find((m) => m !== member && m.isRunning());
    if (!peer) throw new Error('no running member to remove and re-add the restarted one through');
    await this.waitForLeader(timeoutMs);
    const list = await gateway<{ members?: Array<{ ID?: string; name?: string }> }>(peer.clientUrl, '/v3/cluster/member/list', 5_000);
    const id = list?.members?.find((m) => m.name === member.name)?.ID;
    if (!id) throw new Error(`etcd member ${member.name} is not in the member list`);
    await reconfigure(peer, '/v3/cluster/member/remove', { ID: id }, timeoutMs);
    await rm(path.join(member.dir, 'data'), { recursive: true, force: true });
    await reconfigure(peer, '/v3/cluster/member/add', { peerURLs: [member.peerUrl] }, timeoutMs);
    await member.spawn(true);
    await this.waitForLeader(timeoutMs);
  }

  /** Stops every member (by its own pid) and removes its directory. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.stop()));
  }

  /** `stop()`, for `await using etcd = await startEtcdCluster()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * Start a fresh etcd cluster of `members` members on free loopback ports (never 2379/2380) and wait
 * until it has a leader. Call stop() when done; if starting fails, whatever was started is stopped.
 */
export async function startEtcdCluster(opts: StartEtcdOptions = {}): Promise<LocalEtcdCluster> {
  const { members: count = 3, startTimeout = 20_000, args = [] } = opts;
  if (!Number.isInteger(count) || count < 1 || count > 9) throw new RangeError(`members must be an integer in [1, 9], got ${count}`);
  findEtcd(); // fail fast, before creating temp dirs
  const ports = [];
  for (let i = 0; i < count; i++) ports.push({ client: await freePort(), peer: await freePort() });
  const initialCluster = ports.map((p, i) => `m${i}=http://${HOST}:${p.peer}`).join(',');
  const token = `fencelock-${process.pid}-${ports[0]?.client}`;
  const members = await Promise.all(
    ports.map(
      async (p, i) =>
        new LocalEtcdMember(
          `m${i}`,
          p.client,
          p.peer,
          await mkdtemp(path.join(os.tmpdir(), 'fencelock-etcd-')),
          initialCluster,
          token,
          args,
        ),
    ),
  );
  const cluster = new LocalEtcdCluster(members);
  try {
    await Promise.all(members.map((m) => m.spawn(false)));
    await cluster.waitForLeader(startTimeout);
    return cluster;
  } catch (error) {
    const logs = await Promise.all(members.map(async (m) => `${m.name}: ${await m.logTail()}`));
    await cluster.stop();
    throw new Error(`etcd cluster failed to start: ${(error as Error).message}\n${logs.join('\n')}`);
  }
}
