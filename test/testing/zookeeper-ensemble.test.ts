import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  startZooKeeperEnsemble,
  ZooKeeperNotFoundError,
  type LocalZooKeeperEnsemble,
  type LocalZooKeeperServer,
} from '../../src/testing/index.js';
import { findZooKeeper } from '../../src/testing/zookeeper-ensemble.js';
import { requireZooKeeper } from '../support/optional.js';

// Everything started here is stopped in `after`, even when an assertion fails midway.
const started: LocalZooKeeperEnsemble[] = [];
after(() => Promise.all(started.map((e) => e.stop())));

async function start(servers = 3): Promise<{ ensemble: LocalZooKeeperEnsemble; ms: number }> {
  const t0 = performance.now();
  const ensemble = await startZooKeeperEnsemble({ servers });
  started.push(ensemble);
  return { ensemble, ms: Math.round(performance.now() - t0) };
}

/**
 * A command of ZooKeeper's own client (ZooKeeperMain, as zkCli.sh runs it) through one server: a real client
 * session, no client library (the helper is what is under test). Bounded: the JVM is killed after 30 s.
 */
async function zkCli(server: LocalZooKeeperServer, ...command: string[]): Promise<string> {
  const { java, classpath } = findZooKeeper();
  const jvm = ['-Xshare:auto', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Dlog4j.configuration=file:/dev/null'];
  const { stdout } = await promisify(execFile)(
    java,
    [...jvm, '-cp', classpath, 'org.apache.zookeeper.ZooKeeperMain', '-server', `127.0.0.1:${server.clientPort}`, ...command],
    { timeout: 30_000 },
  );
  return stdout;
}

/** Polls `probe` every 50 ms until it returns something other than undefined; bounded by `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} not within ${timeoutMs} ms`);
}

/** `zk_znode_count` from a server's `mntr`, undefined if it does not answer. */
async function znodeCount(server: LocalZooKeeperServer): Promise<number | undefined> {
  const count = /^zk_znode_count\s+(\d+)/m.exec((await server.command('mntr')) ?? '')?.[1];
  return count === undefined ? undefined : Number(count);
}

/** What `server` has written to its zookeeper.log since `offset` (its length before), for how it synced. */
const logSince = async (server: LocalZooKeeperServer, offset: number): Promise<string> =>
  (await readFile(path.join(server.dir, 'zookeeper.log'), 'utf8')).slice(offset);
const logLength = async (server: LocalZooKeeperServer): Promise<number> =>
  (await readFile(path.join(server.dir, 'zookeeper.log'), 'utf8')).length;

const modes = (ensemble: LocalZooKeeperEnsemble): Promise<Array<string | undefined>> => Promise.all(ensemble.servers.map((s) => s.mode()));

describe('local ZooKeeper ensemble', { skip: requireZooKeeper('ZooKeeper (startZooKeeperEnsemble)') }, () => {
  test('three servers on distinct free ports (never 2181/2888/3888), one leader; a znode written through one is read through another', async (t) => {
    const { ensemble, ms } = await start();
    t.diagnostic(`startZooKeeperEnsemble({ servers: 3 }) ready in ${ms} ms`);
    const ports = ensemble.servers.flatMap((s) => [s.clientPort, s.quorumPort, s.electionPort]);
    assert.equal(new Set(ports).size, 9);
    assert.ok(![2181, 2888, 3888].some((p) => ports.includes(p)));
    assert.deepEqual(
      ensemble.servers.map((s) => [s.id, s.name]),
      [
        [1, 'zk1'],
        [2, 'zk2'],
        [3, 'zk3'],
      ],
    );
    assert.match(ensemble.connectionString, /^127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/);
    assert.equal(ensemble.url, `zk://${ensemble.connectionString}`);
    const roles = await modes(ensemble);
    assert.deepEqual([...roles].sort(), ['follower', 'follower', 'leader']);
    const leader = await ensemble.leader();
    assert.equal(roles[ensemble.servers.indexOf(leader as LocalZooKeeperServer)], 'leader');
    assert.equal(new Set(ensemble.servers.map((s) => s.pid)).size, 3);

    const [first, , third] = ensemble.servers as [LocalZooKeeperServer, LocalZooKeeperServer, LocalZooKeeperServer];
    const before = await znodeCount(first);
    await zkCli(first, 'create', '/fencelock-test', 'written-through-zk1');
    assert.match(await zkCli(third, 'get', '/fencelock-test'), /^written-through-zk1$/m, 'written through zk1, read through zk3');
    // Every server applies the commit (a follower may apply it a moment after the client's answer).
    await until('the same znode count on every server', 10_000, async () => {
      const counts = await Promise.all(ensemble.servers.map(znodeCount));
      return counts.every((c) => c === (before ?? 0) + 1) ? counts : undefined;
    });
  });

  test('SIGKILL of the leader elects another in bounded time; the old leader restarts with its data as a follower', async (t) => {
    const { ensemble } = await start();
    const old = await ensemble.waitForLeader();
    await zkCli(old, 'create', '/before', 'v1');
    const pid = old.pid as number;
    const t0 = performance.now();
    await old.kill();
    assert.equal(old.isRunning(), false);
    assert.throws(() => process.kill(pid, 0), 'the process is gone');
    const next = await ensemble.waitForLeader(10_000);
    const electionMs = Math.round(performance.now() - t0);
    t.diagnostic(`a new leader (${next.name}) ${electionMs} ms after SIGKILL of ${old.name}`);
    assert.notEqual(next, old);
    await zkCli(next, 'create', '/during', 'v2');

    assert.ok(
      readdirSync(path.join(old.dataDir, 'version-2')).some((f) => f.startsWith('log.')),
      'its transaction log is still there',
    );
    const offset = await logLength(old);
    const t1 = performance.now();
    await old.restart();
    assert.notEqual(old.pid, pid);
    assert.equal(await old.waitUntilServing(20_000), 'follower');
    t.diagnostic(`${old.name} serves again as a follower ${Math.round(performance.now() - t1)} ms after restart()`);
    const sync = await logSince(old, offset);
    assert.match(sync, /Getting a diff from the leader/, 'it synced from its own data (a diff), not a full snapshot');
    assert.match(await zkCli(old, 'get', '/before'), /^v1$/m);
    assert.match(await zkCli(old, 'get', '/during'), /^v2$/m, 'caught up with what was written while it was down');
    assert.deepEqual([...(await modes(ensemble))].sort(), ['follower', 'follower', 'leader']);
  });

  test('a paused leader stops answering while the other two elect a leader; resumed, it follows; restartEmpty rejoins from a snapshot', async (t) => {
    const { ensemble } = await start();
    const old = await ensemble.waitForLeader();
    await zkCli(old, 'create', '/kept', 'v1');
    const t0 = performance.now();
    old.pause();
    assert.equal(await old.mode(500), undefined, 'a paused server does not answer');
    const next = await ensemble.waitForLeader(15_000);
    t.diagnostic(`a new leader (${next.name}) ${Math.round(performance.now() - t0)} ms after SIGSTOP of ${old.name}`);
    assert.notEqual(next, old);
    assert.equal(await old.mode(500), undefined, 'still silent while paused');
    old.resume();
    // Resumed, it may answer as leader for a moment before it notices it lost its followers: poll for follower.
    await until(`${old.name} following after resume`, 15_000, async () => ((await old.mode()) === 'follower' ? true : undefined));
    assert.deepEqual([...(await modes(ensemble))].sort(), ['follower', 'follower', 'leader']);

    const wiped = ensemble.servers.find((s) => s !== next) as LocalZooKeeperServer;
    const offset = await logLength(wiped);
    await wiped.restartEmpty();
    assert.ok(existsSync(path.join(wiped.dataDir, 'myid')), 'the same myid');
    assert.equal(await wiped.waitUntilServing(20_000), 'follower');
    assert.match(await logSince(wiped, offset), /Getting a snapshot from leader/, 'an empty server takes a full snapshot');
    assert.match(await zkCli(wiped, 'get', '/kept'), /^v1$/m, 'it has the data again');
  });

  test('pause() returns once every thread of the JVM has stopped: a request sent right after gets no answer (20 times)', async () => {
    // kill(SIGSTOP) returns before the JVM has stopped: one thread takes the signal, then stops the others, and
    // until then its network threads answer. Before pause() waited, 25 of 60 pauses found threads still running
    // and 1 in 60 answered `srvr` (11 in 60 beside two busy loops): the once-seen failure of the test above.
    const { ensemble } = await start(1);
    const server = ensemble.servers[0] as LocalZooKeeperServer;
    const states = (): string[] =>
      readdirSync(`/proc/${server.pid}/task`).map((tid) => {
        const stat = readFileSync(`/proc/${server.pid}/task/${tid}/stat`, 'utf8');
        return stat.charAt(stat.lastIndexOf(')') + 2);
      });
    for (let i = 0; i < 20; i++) {
      server.pause();
      if (process.platform === 'linux') assert.deepEqual([...new Set(states())], ['T'], `pause ${i}: every thread stopped`);
      assert.equal(await server.mode(200), undefined, `pause ${i}: no answer`);
      server.resume();
      assert.equal(await server.waitUntilServing(10_000), 'leader');
    }
  });

  test('stop() ends every server by its own pid and removes its directory; a one-server ensemble leads itself', async () => {
    const ensemble = await startZooKeeperEnsemble({ servers: 1 });
    assert.equal(await ensemble.servers[0]?.mode(), 'leader');
    const pids = ensemble.servers.map((s) => s.pid as number);
    const dirs = ensemble.servers.map((s) => s.dir);
    await ensemble.stop();
    for (const pid of pids) assert.throws(() => process.kill(pid, 0));
    assert.ok(dirs.every((d) => !existsSync(d)));
    await ensemble.stop(); // twice is fine
  });
});

describe('ZooKeeper helper input', () => {
  const zkDirs = (): string[] => readdirSync(os.tmpdir()).filter((f) => f.startsWith('fencelock-zk-'));

  /** Runs `fn` with `vars` set in the environment, restoring it after. */
  async function withEnv(vars: Record<string, string>, fn: () => Promise<void>): Promise<void> {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    Object.assign(process.env, vars);
    try {
      await fn();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }

  test('a missing installation is a clear error naming the packages, before any process starts', async () => {
    const dirsBefore = zkDirs().length;
    await withEnv({ ZOOKEEPER_CLASSPATH: '/nonexistent/zookeeper.jar' }, () =>
      assert.rejects(
        startZooKeeperEnsemble(),
        (e: unknown) =>
          e instanceof ZooKeeperNotFoundError &&
          /\/nonexistent\/zookeeper\.jar/.test(e.message) &&
          /apt-get install -y zookeeper/.test(e.message) &&
          /default-jre-headless/.test(e.message) &&
          /brew install zookeeper/.test(e.message),
      ),
    );
    await withEnv({ ZOOKEEPER_CLASSPATH: '', ZOOKEEPER_HOME: '/nonexistent' }, () =>
      assert.rejects(startZooKeeperEnsemble(), ZooKeeperNotFoundError),
    );
    await withEnv({ JAVA: '/nonexistent/java' }, () =>
      assert.rejects(
        startZooKeeperEnsemble(),
        (e: unknown) => e instanceof ZooKeeperNotFoundError && /JAVA=\/nonexistent\/java/.test(e.message),
      ),
    );
    assert.equal(zkDirs().length, dirsBefore, 'no temp dir was made');
  });

  test('servers must be an integer in [1, 9], checked before anything else', async () => {
    await withEnv({ ZOOKEEPER_CLASSPATH: '/nonexistent/zookeeper.jar' }, async () => {
      for (const servers of [0, -1, 1.5, 10, Number.NaN]) await assert.rejects(startZooKeeperEnsemble({ servers }), RangeError);
    });
  });
});
