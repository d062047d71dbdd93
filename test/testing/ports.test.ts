// The ports of fencelock/testing's servers (src/testing/ports.ts): never the same port for two servers, in one
// process or across the concurrent test files' processes, never one the kernel may hand to someone else before
// the server binds it; and a server is only taken as started when the answer on its port is its own
// (src/testing/linux-proc.ts). Linux only: the checks read /proc.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startEtcdCluster, startRedisNode, startZooKeeperEnsemble } from '../../src/testing/index.js';
import { listenerOf } from '../../src/testing/linux-proc.js';
import { freePort, HOST, PORT_LOCK_DIR, releasePort } from '../../src/testing/ports.js';
import { tsEntry } from '../support/entry.js';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';

const linux = process.platform === 'linux' ? false : 'reads /proc (Linux only)';
const ephemeral = (): [number, number] =>
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number];
const inEphemeral = (port: number): boolean => {
  const [low, high] = ephemeral();
  return port >= low && port <= high;
};

interface Holder {
  readonly child: ChildProcessWithoutNullStreams;
  readonly taken: Promise<{ pid: number; ports: number[] }>;
}

/** test/fixtures/port-holder.ts taking `count` ports (each with its companion at `offset`), held until stdin closes. */
function holder(count: number, offset?: number): Holder {
  const args = [String(count), ...(offset === undefined ? [] : [String(offset)])];
  const child = spawn(process.execPath, [...tsEntry('test/fixtures/port-holder.ts'), ...args]);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const taken = new Promise<{ pid: number; ports: number[] }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`port-holder printed nothing within 30 s: ${err}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('\n')) return;
      clearTimeout(timer);
      resolve(JSON.parse(out) as { pid: number; ports: number[] });
    });
    child.once('exit', (code) => reject(new Error(`port-holder exited (${code}) before printing: ${err}`)));
  });
  return { child, taken };
}

describe('ports of the local servers', { skip: linux }, () => {
  test('four processes taking ports at once never get the same one, nor one of the ephemeral range; their locks go when they exit', async () => {
    // Two take plain ports, two a port with its Redis Cluster bus companion (+10000): 1,500 ports in all.
    const holders = [holder(250), holder(250), holder(250, 10_000), holder(250, 10_000)];
    try {
      const taken = await Promise.all(holders.map((h) => h.taken));
      const all = taken.flatMap(({ ports }, i) => (i < 2 ? ports : ports.flatMap((p) => [p, p + 10_000])));
      assert.equal(all.length, 1_500);
      assert.equal(new Set(all).size, all.length, 'no port was handed out twice');
      assert.deepEqual(
        all.filter((p) => inEphemeral(p)),
        [],
        'none from the range bind(0) and outgoing connections take ports from',
      );
      assert.ok(!all.some((p) => [6379, 16379, 26379, 2379, 2380, 2181, 2888, 3888].includes(p)), 'no real server default');
      for (const { pid, ports } of taken)
        for (const p of ports) assert.equal(readFileSync(path.join(PORT_LOCK_DIR, String(p)), 'utf8').trim(), String(pid));
      for (const h of holders) h.child.stdin.end();
      await Promise.all(holders.map((h) => (h.child.exitCode === null ? once(h.child, 'exit') : undefined)));
      assert.deepEqual(
        taken.filter(({ pid }) => existsSync(path.join(PORT_LOCK_DIR, `pid-${pid}`))),
        [],
        'and its pid file',
      );
      // Another test file's process may take a port the moment a holder gives it back (the lock directory is
      // the machine's: a full suite run saw it once), so a lock file left counts only if it names a holder.
      const holderPids = new Set(taken.map(({ pid }) => String(pid)));
      const ownerOf = (p: number): string | undefined => {
        try {
          return readFileSync(path.join(PORT_LOCK_DIR, String(p)), 'utf8').trim();
        } catch {
          return undefined; // no lock file: given back
        }
      };
      assert.deepEqual(
        all.filter((p) => holderPids.has(ownerOf(p) ?? '')),
        [],
        'each holder removed its locks as it exited',
      );
    } finally {
      // Closing stdin lets a holder exit by itself (removing its locks); one that does not within 10 s is killed.
      for (const h of holders) h.child.stdin.end();
      const exits = holders.map((h) => (h.child.exitCode === null ? once(h.child, 'exit') : undefined));
      const timer = setTimeout(() => holders.forEach((h) => h.child.exitCode === null && h.child.kill('SIGKILL')), 10_000);
      await Promise.all(exits);
      clearTimeout(timer);
    }
  });

  test('a port another process listens on: the start fails naming the port taken twice, instead of taking that answer for its own', async () => {
    const port = await freePort();
    // A stand-in for another test file's Redis on the same port: it answers PONG to anything.
    const impostor = net.createServer((socket) => socket.on('data', () => socket.write('+PONG\r\n')));
    await new Promise<void>((resolve) => impostor.listen(port, HOST, resolve));
    try {
      assert.equal(listenerOf(process.pid, port), 'own');
      // The server gets to bind (and to fail to) only after a second, as a slow start would: the impostor answers first.
      const start = startRedisNode({ port, commandPrefix: ['sh', '-c', 'sleep 1; exec "$0" "$@"'] });
      await assert.rejects(start, (e: Error) => /another process listens on 127\.0\.0\.1:\d+ .*taken twice/.test(e.message), 'not started');
      const free = await freePort();
      assert.equal(listenerOf(process.pid, free), 'none');
      releasePort(free);
    } finally {
      impostor.close();
      releasePort(port);
    }
  });

  test(
    'ZooKeeper ensembles, etcd clusters and Redis nodes started at once: every port distinct, outside the ephemeral range, and listened on by its own server',
    { skip: requireEtcd('etcd') || requireZooKeeper('ZooKeeper') },
    async () => {
      // Whatever started is stopped, also when another start failed.
      const started: Array<{ stop(): Promise<void> }> = [];
      const tracked = <T extends { stop(): Promise<void> }>(start: Promise<T>): Promise<T> => start.then((s) => (started.push(s), s));
      try {
        const [zkA, zkB, etcdA, etcdB, redis] = await Promise.all([
          tracked(startZooKeeperEnsemble({ servers: 1 })),
          tracked(startZooKeeperEnsemble({ servers: 1 })),
          tracked(startEtcdCluster({ members: 1 })),
          tracked(startEtcdCluster({ members: 1 })),
          Promise.all(Array.from({ length: 4 }, () => tracked(startRedisNode()))),
        ]);
        const servers = [
          ...[zkA, zkB].flatMap((e) => e.servers.map((s) => ({ pid: s.pid, ports: [s.clientPort, s.electionPort, s.quorumPort] }))),
          ...[etcdA, etcdB].flatMap((c) => c.members.map((m) => ({ pid: m.pid, ports: [m.clientPort, m.peerPort] }))),
          ...redis.map((n) => ({ pid: n.pid, ports: [n.port] })),
        ];
        const ports = servers.flatMap((s) => s.ports);
        assert.equal(new Set(ports).size, ports.length, 'distinct');
        assert.deepEqual(
          ports.filter((p) => inEphemeral(p)),
          [],
          'outside the ephemeral range',
        );
        // A one-server ensemble leads itself, so it listens on its quorum port too.
        for (const { pid, ports: own } of servers)
          for (const p of own) assert.equal(listenerOf(pid as number, p), 'own', `port ${p} of pid ${pid}`);
      } finally {
        await Promise.all(started.map((s) => s.stop()));
      }
    },
  );
});
