import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { EtcdNotFoundError, startEtcdCluster, type LocalEtcdCluster } from '../../src/testing/index.js';
import { requireEtcd } from '../support/optional.js';

// Everything started here is stopped in `after`, even when an assertion fails midway.
const started: LocalEtcdCluster[] = [];
after(() => Promise.all(started.map((c) => c.stop())));

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A put or a range through one member's gRPC gateway (no client library: the helper is what is under test). */
async function kv(clientUrl: string, op: 'put' | 'range', key: string, value?: string): Promise<string | undefined> {
  const body = op === 'put' ? { key: b64(key), value: b64(value ?? '') } : { key: b64(key) };
  const res = await fetch(`${clientUrl}/v3/kv/${op}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200, `${op} on ${clientUrl}`);
  const json = (await res.json()) as { kvs?: Array<{ value: string }> };
  const found = json.kvs?.[0]?.value;
  return found === undefined ? undefined : Buffer.from(found, 'base64').toString();
}

/** The member's status once it answers (a restarted member answers once it caught up with the leader); bounded. */
async function statusOnceUp(member: LocalEtcdCluster['members'][number], timeoutMs = 10_000): Promise<{ leader: boolean } | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (!(await member.status()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return member.status();
}

describe('local etcd cluster', { skip: requireEtcd('etcd (startEtcdCluster)') }, () => {
  test('three members on distinct free ports (never 2379/2380) form one cluster with a leader', async () => {
    const cluster = await startEtcdCluster({ members: 3 });
    started.push(cluster);
    const ports = cluster.members.flatMap((m) => [m.clientPort, m.peerPort]);
    assert.equal(new Set(ports).size, 6);
    assert.ok(!ports.includes(2379) && !ports.includes(2380));
    assert.match(cluster.url, /^etcd:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/);
    assert.ok(await cluster.leader(), 'a leader');
    await kv(cluster.endpoints[0] as string, 'put', 'k', 'v1');
    assert.equal(await kv(cluster.endpoints[2] as string, 'range', 'k'), 'v1', 'written on one member, read on another');
  });

  test('killing the leader elects another; the old one restarts with its data and rejoins; pause and resume', async () => {
    const cluster = await startEtcdCluster({ members: 3 });
    started.push(cluster);
    const old = await cluster.waitForLeader();
    await kv(old.clientUrl, 'put', 'k', 'before');
    const pid = old.pid as number;
    await old.kill();
    assert.equal(old.isRunning(), false);
    assert.throws(() => process.kill(pid, 0), 'the process is gone');
    const next = await cluster.waitForLeader(10_000);
    assert.notEqual(next, old);
    await kv(next.clientUrl, 'put', 'k', 'during');
    await old.restart();
    assert.deepEqual(await statusOnceUp(old), { leader: false }, 'the rejoined member answers, as a follower');
    assert.equal(await kv(old.clientUrl, 'range', 'k'), 'during', 'caught up with what was written while it was down');

    const follower = cluster.members.find((m) => m !== next) as (typeof cluster.members)[number];
    follower.pause();
    assert.equal(await follower.status(500), undefined, 'a paused member does not answer');
    assert.equal(await kv(next.clientUrl, 'range', 'k'), 'during', 'the other two still serve');
    follower.resume();
    assert.ok(await follower.status(5_000), 'it answers again');

    // Two restarts and a kill called at once run one after another (LocalServer.serially): each restart's
    // member started and ran, and the kill, called last, ended the second one.
    const pids: Array<number | undefined> = [];
    const restarts = [follower.restart(), follower.restart()].map((r) => r.then(() => pids.push(follower.pid)));
    const killed = follower.kill();
    await Promise.all([...restarts, killed]);
    assert.equal(pids.length, 2);
    assert.ok(pids[0] !== undefined && pids[1] !== undefined && pids[0] !== pids[1], `two processes in turn: ${pids.join(', ')}`);
    assert.equal(follower.isRunning(), false);
    await follower.restart();
    assert.ok(await statusOnceUp(follower), 'and it comes back once more');
  });

  test('stop() ends every member by its own pid and removes its directory', async () => {
    const cluster = await startEtcdCluster({ members: 1 });
    const pids = cluster.members.map((m) => m.pid as number);
    const dirs = cluster.members.map((m) => m.dir);
    await cluster.stop();
    for (const pid of pids) assert.throws(() => process.kill(pid, 0));
    assert.ok(dirs.every((d) => !existsSync(d)));
    await cluster.stop(); // twice is fine
  });
});

describe('etcd helper input', () => {
  test('a missing binary is a clear error naming the package, before any process starts', async () => {
    const saved = process.env.ETCD;
    process.env.ETCD = '/nonexistent/etcd';
    try {
      await assert.rejects(startEtcdCluster(), (e: unknown) => e instanceof EtcdNotFoundError && /etcd-server/.test((e as Error).message));
    } finally {
      if (saved === undefined) delete process.env.ETCD;
      else process.env.ETCD = saved;
    }
  });

  test('members must be an integer in [1, 9]', async () => {
    for (const members of [0, 1.5, 10]) await assert.rejects(startEtcdCluster({ members }), RangeError);
  });
});
