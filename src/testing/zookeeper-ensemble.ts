// Throw-away ZooKeeper ensembles for tests, the demo and users' own tests: real ZooKeeper servers (one JVM
// each, QuorumPeerMain), each with its own temp dir (data dir with `myid`, `zoo.cfg`, logs) and three free
// loopback ports (client, quorum, leader election), signalled only through their own PIDs.
import { accessSync, constants, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, releasePort } from './ports.js';
import { findBinary, HOST, LocalServer, sleep } from './processes.js';

/** Options of `startZooKeeperEnsemble`. */
export interface StartZooKeeperOptions {
  /** servers of the ensemble, default 3 (an odd number keeps a majority through one loss) */
  servers?: number;
  /** ms to wait until every server serves and one of them leads, default 30_000 (a JVM starts slowly) */
  startTimeout?: number;
  /**
   * ZooKeeper's `tickTime` in ms, default 200: its unit of time. Followers give up on a silent leader after
   * `syncLimit` (5) ticks, and sessions last between 2 and 300 ticks (so 400 ms to 60 s by default).
   */
  tickTime?: number;
  /** extra `zoo.cfg` entries for every server (they replace the defaults of the same name) */
  config?: Readonly<Record<string, string | number | boolean>>;
  /** extra JVM arguments for every server (placed before the main class) */
  jvmArgs?: string[];
}

/** Thrown when ZooKeeper's jars or a Java runtime cannot be found, so the fix is in the message rather than in a JVM error. */
export class ZooKeeperNotFoundError extends Error {
  constructor(detail: string) {
    super(
      `${detail}. The fencelock ZooKeeper helpers run real ZooKeeper servers on a Java runtime: install them ` +
        '(Debian/Ubuntu: `sudo apt-get install -y zookeeper`, or only the jars and a headless JRE: ' +
        '`sudo apt-get install -y libzookeeper-java default-jre-headless`; macOS: `brew install zookeeper`, ' +
        'then ZOOKEEPER_HOME=$(brew --prefix zookeeper)/libexec), or point ZOOKEEPER_HOME at a ZooKeeper release ' +
        'or ZOOKEEPER_CLASSPATH at its jars, and JAVA_HOME (or PATH) at a Java runtime.',
    );
    this.name = 'ZooKeeperNotFoundError';
  }
}

/** Where Debian's libzookeeper-java puts the server's jar; its manifest's Class-Path names every dependency. */
const DEBIAN_JAR = '/usr/share/java/zookeeper.jar';
/** Debian's zookeeper.jar logs through SLF4J; these two (its package's dependencies) route that to log4j 1.2. */
const DEBIAN_LOGGING = ['/usr/share/java/slf4j-log4j12.jar', '/usr/share/java/log4j-1.2.jar'];

const isFile = (file: string): boolean => {
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
};

/** The jars of a ZooKeeper release directory (`lib/*.jar` and `*.jar`, a Homebrew `libexec` alike). */
function releaseJars(home: string): string[] {
  const jars: string[] = [];
  for (const dir of [home, path.join(home, 'lib')]) {
    try {
      jars.push(
        ...readdirSync(dir)
          .filter((f) => f.endsWith('.jar'))
          .map((f) => path.join(dir, f)),
      );
    } catch {
      // no such directory
    }
  }
  return jars;
}

/**
 * @internal Java and the server's classpath: `$ZOOKEEPER_CLASSPATH` as given, else the jars of
 * `$ZOOKEEPER_HOME`, else Debian's layout (libzookeeper-java); Java is `$JAVA` (as zkEnv.sh names it), else
 * `$JAVA_HOME/bin/java`, else `java` on PATH.
 */
export function findZooKeeper(): { java: string; classpath: string } {
  let classpath: string;
  const fromEnv = process.env.ZOOKEEPER_CLASSPATH;
  const home = process.env.ZOOKEEPER_HOME;
  if (fromEnv) {
    const missing = fromEnv.split(path.delimiter).filter((e) => e && !e.includes('*') && !isFile(e));
    if (missing.length > 0) throw new ZooKeeperNotFoundError(`ZOOKEEPER_CLASSPATH names ${missing.join(', ')}, which cannot be read`);
    classpath = fromEnv;
  } else if (home) {
    const jars = releaseJars(home);
    if (!jars.some((j) => /(^|\/)zookeeper(-[\d.]+)?\.jar$/.test(j)))
      throw new ZooKeeperNotFoundError(`ZOOKEEPER_HOME=${home} has no zookeeper jar in it or in its lib/`);
    classpath = jars.join(path.delimiter);
  } else if (isFile(DEBIAN_JAR)) {
    classpath = [DEBIAN_JAR, ...DEBIAN_LOGGING.filter(isFile)].join(path.delimiter);
  } else {
    throw new ZooKeeperNotFoundError(`ZooKeeper was not found (no ${DEBIAN_JAR}, no ZOOKEEPER_HOME or ZOOKEEPER_CLASSPATH)`);
  }
  // $JAVA, else java on PATH; $JAVA_HOME comes between the two
  const { file, fromEnv: javaVar } = findBinary('JAVA', 'java');
  if (javaVar && !file) throw new ZooKeeperNotFoundError(`JAVA=${javaVar} is not an executable file`);
  const javaHome = process.env.JAVA_HOME;
  if (!javaVar && javaHome) {
    const java = path.join(javaHome, 'bin', 'java');
    try {
      accessSync(java, constants.X_OK);
      return { java, classpath };
    } catch {
      throw new ZooKeeperNotFoundError(`JAVA_HOME=${javaHome} has no executable bin/java`);
    }
  }
  if (!file) throw new ZooKeeperNotFoundError('java was not found on PATH (nor JAVA or JAVA_HOME set)');
  return { java: file, classpath };
}

/**
 * Sends a four-letter word (`srvr`, `mntr`, `ruok`, …) to a ZooKeeper client port and resolves with the whole
 * answer; undefined if nothing comes back within `timeoutMs` (down, paused) or the connection fails.
 */
function fourLetterWord(port: number, word: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: HOST, port });
    const done = (answer: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('connect', () => socket.end(word));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('end', () => done(Buffer.concat(chunks).toString('utf8')));
    socket.once('error', () => done(undefined));
  });
}

/** The role a serving ZooKeeper server reports. */
export type ZooKeeperMode = 'leader' | 'follower';

// Log4j 1.2 (Debian's package) and Logback (Apache's releases): everything into the server's own zookeeper.log.
const log4jProperties = (dir: string): string =>
  [
    'log4j.rootLogger=INFO, FILE',
    'log4j.appender.FILE=org.apache.log4j.FileAppender',
    `log4j.appender.FILE.File=${path.join(dir, 'zookeeper.log')}`,
    'log4j.appender.FILE.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n',
    '',
  ].join('\n');
const logbackXml = (dir: string): string =>
  [
    '<configuration>',
    '  <appender name="FILE" class="ch.qos.logback.core.FileAppender">',
    `    <file>${path.join(dir, 'zookeeper.log')}</file>`,
    '    <encoder><pattern>%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n</pattern></encoder>',
    '  </appender>',
    '  <root level="INFO"><appender-ref ref="FILE"/></root>',
    '</configuration>',
    '',
  ].join('\n');

/** A ZooKeeper server process the tests can crash, hang and bring back with or without its data. */
export class LocalZooKeeperServer extends LocalServer {
  #stopped = false;

  /** @internal use startZooKeeperEnsemble() */
  constructor(
    /** its `myid` in the ensemble: 1, 2, … */
    readonly id: number,
    /** its free loopback port for clients (and four-letter words) */
    readonly clientPort: number,
    /** its free loopback port for followers to reach it when it leads */
    readonly quorumPort: number,
    /** its free loopback port for leader election */
    readonly electionPort: number,
    /** its temporary directory: `zoo.cfg`, `data/` (with `myid`), `zookeeper.log`, `stderr.log` */
    readonly dir: string,
    private readonly zooCfg: string,
    private readonly jvmArgs: readonly string[],
  ) {
    super(`zookeeper server zk${id}`);
  }

  /** its name: `zk<id>` */
  get name(): string {
    return `zk${this.id}`;
  }

  /** its data dir (`myid`, snapshots, transaction logs) */
  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /**
   * Crash (SIGKILL) and bring back on the same ports with its data: it rejoins the ensemble as the same server.
   * Resolves once the process runs; `waitUntilServing()` waits for it to have synced with a leader.
   */
  restart(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error(`zookeeper server ${this.name} was stopped`));
    return this.serially(async () => {
      await this.process.kill();
      await this.spawn();
    });
  }

  /**
   * Crash (SIGKILL), lose every snapshot and transaction log (a replaced disk), and come back on the same ports
   * with the same `myid`: it rejoins and takes a full snapshot from the leader. Resolves once the process runs.
   * With a majority of the ensemble empty at once, committed data can be lost: that is ZooKeeper's contract.
   */
  restartEmpty(): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error(`zookeeper server ${this.name} was stopped`));
    return this.serially(async () => {
      await this.process.kill();
      await rm(this.dataDir, { recursive: true, force: true });
      await this.spawn();
    });
  }

  /** Kill and remove its temp dir; safe to call twice. */
  stop(): Promise<void> {
    this.#stopped = true;
    return this.serially(async () => {
      await this.process.kill();
      for (const port of [this.clientPort, this.quorumPort, this.electionPort]) releasePort(port);
      await rm(this.dir, { recursive: true, force: true });
    });
  }

  /**
   * Sends a four-letter word (`srvr`, `mntr`, `stat`, `ruok`, `conf`, …; all are enabled) to its client port
   * and resolves with the answer; undefined if it does not answer within `timeoutMs` (down, paused).
   */
  async command(word: string, timeoutMs = 1_000): Promise<string | undefined> {
    if (!this.process.isRunning()) return undefined;
    const answer = await fourLetterWord(this.clientPort, word, timeoutMs);
    // Only its own answer counts (a server of another ensemble on the same port is an error, said so).
    return answer !== undefined && this.process.answeredOn(this.clientPort) ? answer : undefined;
  }

  /**
   * Its role from `srvr`: `'leader'` or `'follower'` while it serves; undefined while it does not answer (down,
   * paused) or does not serve (an election, still syncing with the leader).
   */
  async mode(timeoutMs = 1_000): Promise<ZooKeeperMode | undefined> {
    const answer = await this.command('srvr', timeoutMs);
    const mode = /^Mode: (\w+)/m.exec(answer ?? '')?.[1];
    return mode === 'leader' || mode === 'follower' ? mode : undefined;
  }

  /** Resolves with its role once it serves (after a restart: synced with the leader), within `timeoutMs`. */
  async waitUntilServing(timeoutMs = 20_000): Promise<ZooKeeperMode> {
    const deadline = Date.now() + timeoutMs;
    // Bounded by the deadline; each pass asks once (at most 1 s).
    while (Date.now() < deadline) {
      if (!this.isRunning()) throw new Error(`zookeeper server ${this.name} is not running\n${await this.logTail()}`);
      const mode = await this.mode(Math.max(1, Math.min(1_000, deadline - Date.now())));
      if (mode) return mode;
      await sleep(50);
    }
    throw new Error(`zookeeper server ${this.name} did not serve within ${timeoutMs} ms`);
  }

  /** @internal write its files (the data dir and `myid` if missing) and start the JVM. */
  async spawn(): Promise<void> {
    if (this.#stopped) throw new Error(`zookeeper server ${this.name} is stopped`);
    const { java, classpath } = findZooKeeper();
    await mkdir(this.dataDir, { recursive: true });
    await writeFile(path.join(this.dataDir, 'myid'), `${this.id}\n`);
    const cfg = path.join(this.dir, 'zoo.cfg');
    await writeFile(cfg, this.zooCfg);
    const log4j = path.join(this.dir, 'log4j.properties');
    const logback = path.join(this.dir, 'logback.xml');
    await writeFile(log4j, log4jProperties(this.dir));
    await writeFile(logback, logbackXml(this.dir));
    const argv = [
      // A small heap, one GC thread, the JDK's shared class archive and the quick JIT tier: a fast start.
      ...['-Xmx256m', '-Xss512k', '-XX:+UseSerialGC', '-Xshare:auto', '-XX:TieredStopAtLevel=1'],
      '-Djava.net.preferIPv4Stack=true',
      `-Dzookeeper.log.dir=${this.dir}`,
      `-Dlog4j.configuration=file:${log4j}`,
      `-Dlogback.configurationFile=${logback}`,
      '-Dzookeeper.jmx.log4j.disable=true',
      // A peer that does not answer (paused) holds up an election for at most this long, not the default 5 s.
      '-Dzookeeper.cnxTimeout=1000',
      ...this.jvmArgs,
      ...['-cp', classpath, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', cfg],
    ];
    // A JVM that cannot start shows as a server that is not running: the start's wait says so, with the logs.
    await this.process.start(java, argv, this.dir);
  }

  /** @internal the last lines of its logs, for a start that failed */
  async logTail(lines = 10): Promise<string> {
    const parts = await Promise.all(['zookeeper.log', 'stderr.log'].map((f) => readFile(path.join(this.dir, f), 'utf8').catch(() => '')));
    return parts.join('\n').trim().split('\n').slice(-lines).join('\n');
  }
}

/** A local ZooKeeper ensemble, stopped as one (also via `await using`). */
export class LocalZooKeeperEnsemble implements AsyncDisposable {
  /** @internal use startZooKeeperEnsemble() */
  constructor(
    /** the servers, by id (`servers[0]` has id 1) */
    readonly servers: readonly LocalZooKeeperServer[],
  ) {}

  /** `127.0.0.1:<port>,127.0.0.1:<port>,…`: every server's client address, as ZooKeeper clients take it */
  get connectionString(): string {
    return this.servers.map((s) => `${HOST}:${s.clientPort}`).join(',');
  }

  /** `zk://127.0.0.1:<port>,127.0.0.1:<port>,…`: one URL for the whole ensemble */
  get url(): string {
    return `zk://${this.connectionString}`;
  }

  /** The current leader, asked of every running server that is not paused; undefined while there is none. */
  async leader(): Promise<LocalZooKeeperServer | undefined> {
    const modes = await Promise.all(this.servers.map((s) => (s.paused ? undefined : s.mode())));
    return this.servers.find((_, i) => modes[i] === 'leader');
  }

  /** Resolves once a server reports itself leader (and serves), within `timeoutMs`. */
  async waitForLeader(timeoutMs = 20_000): Promise<LocalZooKeeperServer> {
    const deadline = Date.now() + timeoutMs;
    // Bounded by the deadline; each pass asks every server once (1 s timeout each, in parallel).
    while (Date.now() < deadline) {
      const leader = await this.leader();
      if (leader) return leader;
      const running = this.servers.filter((s) => s.isRunning()).length;
      if (running <= this.servers.length / 2)
        throw new Error(`only ${running} of ${this.servers.length} zookeeper servers are running: no majority`);
      await sleep(50);
    }
    throw new Error(`no zookeeper leader within ${timeoutMs} ms`);
  }

  /** @internal resolves once every server serves and exactly one leads; a server that exits fails it at once. */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let seen = '';
    // Bounded by the deadline; each pass asks every server once (1 s timeout each, in parallel).
    while (Date.now() < deadline) {
      const dead = this.servers.find((s) => !s.isRunning());
      if (dead) throw new Error(`zookeeper server ${dead.name} exited`);
      const modes = await Promise.all(this.servers.map((s) => s.mode()));
      seen = modes.map((m, i) => `${this.servers[i]?.name}: ${m ?? 'not serving'}`).join(', ');
      if (modes.every((m) => m !== undefined) && modes.filter((m) => m === 'leader').length === 1) return;
      await sleep(100);
    }
    throw new Error(`the zookeeper ensemble was not ready within ${timeoutMs} ms (${seen})`);
  }

  /** Stops every server (by its own pid) and removes its directory. */
  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }

  /** `stop()`, for `await using zk = await startZooKeeperEnsemble()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * Start a fresh ZooKeeper ensemble of `servers` servers on free loopback ports (never 2181, 2888 or 3888)
 * and wait until every server serves and exactly one leads. Call stop() when done; if starting fails, whatever
 * was started is stopped. Needs ZooKeeper's jars and a Java runtime (see `ZooKeeperNotFoundError`).
 */
export async function startZooKeeperEnsemble(opts: StartZooKeeperOptions = {}): Promise<LocalZooKeeperEnsemble> {
  const { servers: count = 3, startTimeout = 30_000, tickTime = 200, config = {}, jvmArgs = [] } = opts;
  if (!Number.isInteger(count) || count < 1 || count > 9) throw new RangeError(`servers must be an integer in [1, 9], got ${count}`);
  if (!Number.isInteger(tickTime) || tickTime < 10) throw new RangeError(`tickTime must be an integer of at least 10 ms, got ${tickTime}`);
  findZooKeeper(); // fail fast, before creating temp dirs
  const ports: Array<{ client: number; quorum: number; election: number }> = [];
  for (let i = 0; i < count; i++) ports.push({ client: await freePort(), quorum: await freePort(), election: await freePort() });
  const dirs = await Promise.all(ports.map(() => mkdtemp(path.join(os.tmpdir(), 'fencelock-zk-'))));
  const settings = (dir: string, clientPort: number): Record<string, string | number | boolean> => ({
    tickTime,
    initLimit: 10,
    syncLimit: 5,
    dataDir: path.join(dir, 'data'),
    clientPort,
    clientPortAddress: HOST,
    maxSessionTimeout: 300 * tickTime,
    // every four-letter word (srvr for the mode, mntr, …); no admin HTTP server (it would take port 8080)
    '4lw.commands.whitelist': '*',
    'admin.enableServer': false,
    // a one-server ensemble is a quorum of one (Mode: leader), like the larger ones, not standalone
    standaloneEnabled: false,
    reconfigEnabled: false,
    // Throw-away data: writes reach the OS (which keeps them through a SIGKILL) but are not fsynced, and
    // the transaction log grows by 1 MB at a time instead of 64 MB.
    forceSync: 'no',
    preAllocSize: 1024,
    ...config,
  });
  const serverLines = ports.map((p, i) => `server.${i + 1}=${HOST}:${p.quorum}:${p.election}`);
  const servers = ports.map((p, i) => {
    const dir = dirs[i] as string;
    const cfg = [...Object.entries(settings(dir, p.client)).map(([k, v]) => `${k}=${String(v)}`), ...serverLines, ''].join('\n');
    return new LocalZooKeeperServer(i + 1, p.client, p.quorum, p.election, dir, cfg, jvmArgs);
  });
  const ensemble = new LocalZooKeeperEnsemble(servers);
  try {
    await Promise.all(servers.map((s) => s.spawn()));
    await ensemble.waitUntilReady(startTimeout);
    return ensemble;
  } catch (error) {
    const logs = await Promise.all(servers.map(async (s) => `${s.name}: ${await s.logTail()}`));
    await ensemble.stop();
    throw new Error(`zookeeper ensemble failed to start: ${(error as Error).message}\n${logs.join('\n')}`);
  }
}
