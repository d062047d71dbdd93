// Node failures on real redis-server processes: crashes (SIGKILL), hangs
// (SIGSTOP), restarts that lose data, a flushed script cache, foreign data at
// our keys, and restart quarantine. Both client libraries.
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockManager, LockError, QuorumError, type Lock, type LockManagerOptions, type NodeFailure } from '../../src/index.js';
import { keysFor, markerKey } from '../../src/redis/keys.js';
import { CLIENT_KINDS, delay, eventually, makeClients, setup, type ClientKind, type Clients, type Setup } from '../support/harness.js';

const NODE_TIMEOUT = 100;
const OPTS: LockManagerOptions = { ttl: 2_000, nodeTimeout: NODE_TIMEOUT };
const PREFIX = 'fencelock:';
/** Every node's marker: epoch, trust, and the fence counter of every resource (src/redis/scripts/_node-state.lua). */
const MARKER = markerKey(PREFIX);

const nodeName = (port: number): string => `127.0.0.1:${port}`;

/** True once every client of the list has a ready connection (after a restart, clients reconnect on their own). */
function clientsReady(kind: ClientKind, clients: Clients): boolean {
  return clients.list.every((c) =>
    kind === 'ioredis' ? (c as { status: string }).status === 'ready' : (c as { isReady: boolean }).isReady,
  );
}

/** Managers made by a test, closed (with their clients) after it. */
class Managers {
  readonly #open: Array<() => Promise<void>> = [];
  async make(kind: ClientKind, urls: readonly string[], options: LockManagerOptions = OPTS): Promise<{ m: LockManager; clients: Clients }> {
    const clients = await makeClients(kind, urls);
    let m: LockManager;
    try {
      m = new LockManager(clients.list, options);
    } catch (error) {
      await clients.close();
      throw error;
    }
    this.#open.push(async () => {
      await m.close();
      await clients.close();
    });
    return { m, clients };
  }
  async closeAll(): Promise<void> {
    while (this.#open.length > 0) await this.#open.pop()!();
  }
}

/** Asserts a QuorumError (code NO_QUORUM) whose nodeErrors name each of `nodes`; returns it for more checks. */
function isQuorumError(error: unknown, nodes: readonly string[]): error is QuorumError {
  assert.ok(error instanceof QuorumError, `expected QuorumError, got ${String(error)}`);
  assert.ok(error instanceof LockError);
  assert.equal(error.code, 'NO_QUORUM');
  for (const n of nodes) {
    assert.ok(
      error.nodeErrors.some((f: NodeFailure) => f.node === n && f.error instanceof Error),
      `nodeErrors ${JSON.stringify(error.nodeErrors.map((f) => f.node))} do not name ${n}`,
    );
    assert.ok(error.message.includes(n), `message does not name ${n}: ${error.message}`);
  }
  return true;
}

for (const kind of CLIENT_KINDS) {
  describe(`${kind}: 5 nodes, failures`, () => {
    let s: Setup;
    const managers = new Managers();
    const paused = new Set<number>();
    let urls: string[];
    let names: string[];

    before(async () => {
      s = await setup(5);
      urls = s.nodes.urls;
      names = s.nodes.nodes.map((n) => nodeName(n.port));
    });
    after(async () => {
      await managers.closeAll();
      for (const i of paused) s?.nodes.nodes[i]?.resume();
      await s?.close();
    });
    // Every test leaves all five nodes running and answering, whatever it did to them.
    afterEach(async () => {
      await managers.closeAll();
      for (const i of paused) s.nodes.nodes[i]!.resume();
      paused.clear();
      await Promise.all(s.nodes.nodes.map((n) => (n.isRunning() ? undefined : n.restart())));
      await eventually(
        async () => (await Promise.all(s.admin.map((a) => a.ping().catch(() => 'no')))).every((p) => p === 'PONG'),
        5_000,
        20,
      );
    });

    test('2 of 5 nodes SIGKILLed: acquire, extend, release, withLock still work and fences still increase', async () => {
      const { m } = await managers.make(kind, urls);
      const errors: string[] = [];
      m.on('nodeError', (e) => errors.push(e.node));
      const resource = `two-dead-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      const first = await m.acquire(resource);
      assert.deepEqual(await first.release(), { released: 5, nodes: 5 });

      await Promise.all([s.nodes.nodes[3]!.kill(), s.nodes.nodes[4]!.kill()]);

      const lock = await m.acquire(resource, { timeout: 2_000 });
      assert.ok(lock.fence > first.fence, `fence ${lock.fence} after ${first.fence}`);
      assert.ok(lock.isValid());
      for (const a of s.admin.slice(0, 3)) assert.equal(await a.get(lockKey), lock.value);
      // contention is still told apart from node failures: null, not QuorumError
      assert.equal(await m.tryAcquire(resource), null);

      await lock.extend(3_000);
      assert.ok(lock.isValid());
      assert.ok(lock.remaining() > 2_000, `remaining ${lock.remaining()} after extend(3000)`);
      for (const a of s.admin.slice(0, 3)) assert.ok((await a.pttl(lockKey)) > 2_000);
      assert.deepEqual(await lock.release(), { released: 3, nodes: 5 });
      for (const a of s.admin.slice(0, 3)) assert.equal(await a.exists(lockKey), 0);

      let fenceInside = 0n;
      const result = await m.withLock(resource, async (l) => {
        fenceInside = l.fence;
        assert.ok(l.isValid());
        return 'done';
      });
      assert.equal(result, 'done');
      assert.ok(fenceInside > lock.fence);

      const last = await m.acquire(resource);
      assert.ok(last.fence > fenceInside);
      await last.release();
      assert.ok(errors.includes(names[3]!) && errors.includes(names[4]!), `nodeError events name the dead nodes: ${errors.join(', ')}`);
    });

    test('3 of 5 nodes SIGKILLed: QuorumError naming the dead nodes, fast; after restart acquire works again', async () => {
      const { m, clients } = await managers.make(kind, urls);
      const resource = `three-dead-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      const dead = [2, 3, 4];
      await (await m.acquire(resource)).release(); // a manager in use, connections up
      await Promise.all(dead.map((i) => s.nodes.nodes[i]!.kill()));
      const deadNames = dead.map((i) => names[i]!);

      const bound = NODE_TIMEOUT * 4 + 200;
      const attempts: Array<[string, () => Promise<unknown>]> = [
        ['tryAcquire', () => m.tryAcquire(resource)],
        ['acquire', () => m.acquire(resource, { timeout: 5_000 })],
        ['acquire (default timeout)', () => m.acquire(resource)],
      ];
      for (const [label, call] of attempts) {
        const t = performance.now();
        await assert.rejects(call(), (e) => isQuorumError(e, deadNames), label);
        const elapsed = performance.now() - t;
        assert.ok(elapsed < bound, `${label} took ${Math.round(elapsed)} ms, more than ${bound}`);
      }
      let ran = false;
      await assert.rejects(
        m.withLock(resource, async () => void (ran = true)),
        (e) => isQuorumError(e, deadNames),
      );
      assert.equal(ran, false);
      // a failed attempt leaves nothing behind on the live nodes
      for (const a of s.admin.slice(0, 2)) assert.equal(await a.exists(lockKey), 0);

      await Promise.all(dead.map((i) => s.nodes.nodes[i]!.restart()));
      const restartedAt = performance.now();
      await eventually(() => clientsReady(kind, clients), 5_000, 10);
      let lock: Lock | null = null;
      await eventually(
        async () => {
          lock = await m.tryAcquire(resource).catch((e: unknown) => {
            assert.ok(e instanceof QuorumError, `only quorum errors while nodes come back, got ${String(e)}`);
            return null;
          });
          return lock !== null;
        },
        5_000,
        20,
      );
      const got = lock as Lock | null;
      assert.ok(got, `no lock ${Math.round(performance.now() - restartedAt)} ms after the restart`);
      for (const a of s.admin) assert.equal(await a.get(lockKey), got.value);
      assert.deepEqual(await got.release(), { released: 5, nodes: 5 });
    });

    test('nodes that die before a manager over connected clients made its first call also fail within nodeTimeout', async () => {
      const { m, clients } = await managers.make(kind, urls);
      await eventually(() => clientsReady(kind, clients), 5_000, 10); // the user's clients are connected
      const dead = [2, 3, 4];
      await Promise.all(dead.map((i) => s.nodes.nodes[i]!.kill()));
      // deterministic: the clients have noticed (otherwise the request may race the crash)
      const noticed = (): boolean =>
        dead.every((i) => {
          const c = clients.list[i] as { status?: string; isReady?: boolean };
          return kind === 'ioredis' ? c.status !== 'ready' : c.isReady === false;
        });
      await eventually(noticed, 5_000, 5);
      const bound = NODE_TIMEOUT * 4 + 200;
      const t = performance.now();
      await assert.rejects(m.tryAcquire(`cold-${kind}`), (e) =>
        isQuorumError(
          e,
          dead.map((i) => names[i]!),
        ),
      );
      const elapsed = performance.now() - t;
      assert.ok(elapsed < bound, `the first call took ${Math.round(elapsed)} ms, more than ${bound}`);
    });

    test('a SIGSTOPped node does not stall acquire beyond nodeTimeout', async () => {
      const { m } = await managers.make(kind, urls);
      const resource = `paused-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      await (await m.acquire(resource)).release(); // connections warm, scripts loaded
      // Nodes earlier tests restarted empty are repaired (or re-trusted by an every-node round) before one hangs:
      // with node 0 hung, only two trusted nodes would answer, too few to repair anything.
      await eventually(
        async () => {
          await (await m.acquire(resource)).release();
          return (await m.inspect(resource)).nodes.every((n) => n.state === 'trusted');
        },
        10_000,
        50,
      );
      s.nodes.nodes[0]!.pause();
      paused.add(0);
      const margin = 200;
      let lastFence = 0n;
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        const lock = await m.acquire(resource, { timeout: 2_000 });
        const took = performance.now() - t;
        assert.ok(took < NODE_TIMEOUT + margin, `acquire ${i} took ${Math.round(took)} ms with one node hung`);
        assert.ok(lock.isValid());
        assert.ok(lock.fence > lastFence);
        lastFence = lock.fence;
        const r0 = performance.now();
        const released = await lock.release();
        assert.ok(performance.now() - r0 < NODE_TIMEOUT + margin, 'release is bounded by nodeTimeout too');
        assert.deepEqual(released, { released: 4, nodes: 5 });
      }
      s.nodes.nodes[0]!.resume();
      paused.delete(0);
      // The hung node runs its queued acquires and releases in order once resumed: no stale lock stays there.
      await eventually(async () => (await s.admin[0]!.exists(lockKey)) === 0, 3_000, 20);
      const again = await m.acquire(resource);
      assert.ok(again.fence > lastFence);
      assert.equal((await again.release()).released, 5);
    });

    test('fences strictly increase across holders after a minority (2 of 5) was restarted empty', async () => {
      const resource = `fence-restart-${kind}`;
      const a = await managers.make(kind, urls);
      let last = 0n;
      for (let i = 0; i < 3; i++) {
        const l = await a.m.acquire(resource);
        assert.ok(l.fence > last);
        last = l.fence;
        await l.release();
      }
      const fenceKey = keysFor(PREFIX, resource).fence;
      await Promise.all([s.nodes.nodes[0]!.restart(), s.nodes.nodes[1]!.restart()]);
      await eventually(async () => (await s.admin[0]!.exists(fenceKey).catch(() => -1)) === 0, 5_000, 20); // really lost
      await eventually(() => clientsReady(kind, a.clients), 5_000, 10);
      // b and c never saw the nodes before: nothing to quarantine for them; a did (restartQuarantine 'observed'),
      // so for a the two restarted nodes do not count for ttl ms, and the other three still make its quorum.
      const b = await managers.make(kind, urls);
      const c = await managers.make(kind, urls);
      const holders = [a.m, b.m, c.m, a.m, c.m, b.m, a.m];
      for (const [i, m] of holders.entries()) {
        const l = await m.acquire(resource, { timeout: 3_000 });
        assert.ok(l.fence > last, `holder ${i}: fence ${l.fence} is not above ${last}`);
        last = l.fence;
        const info = await m.inspect(resource);
        assert.equal(info.holder, l.value);
        assert.equal(info.fence, l.fence, 'no node reports a fence above the current holder');
        await l.release();
      }
    });

    test('SCRIPT FLUSH between calls changes nothing (NOSCRIPT -> EVAL fallback)', async () => {
      const { m } = await managers.make(kind, urls);
      const resource = `flush-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      const evalCalls = async (): Promise<number> => {
        let total = 0;
        for (const a of s.admin) total += Number(/cmdstat_eval:calls=(\d+)/.exec(await a.info('commandstats'))?.[1] ?? 0);
        return total;
      };
      const flush = (): Promise<unknown> => Promise.all(s.admin.map((a) => a.script('FLUSH')));
      const evalsBefore = await evalCalls();

      await flush();
      const lock = await m.acquire(resource);
      await flush();
      await lock.extend(3_000);
      for (const a of s.admin) assert.ok((await a.pttl(lockKey)) > 2_000);
      await flush();
      const info = await m.inspect(resource);
      assert.equal(info.holder, lock.value);
      assert.ok(info.nodes.every((n) => n.error === null));
      await flush();
      assert.deepEqual(await lock.release(), { released: 5, nodes: 5 });
      await flush();
      const result = await m.withLock(resource, async (l) => {
        assert.ok(l.fence > lock.fence);
        return l.fence;
      });
      await flush();
      const held = await m.acquire(resource);
      assert.ok(held.fence > result);
      await flush();
      assert.equal(await m.forceRelease(resource), 5);
      assert.equal(await s.admin[0]!.exists(lockKey), 0);
      assert.ok((await evalCalls()) > evalsBefore, 'the fallback really went through EVAL');
    });

    test('a hash at the lock key is never touched: single node fails with WRONGTYPE naming the node', async () => {
      const { m } = await managers.make(kind, [urls[0]!]);
      const resource = `wrongtype-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      const admin = s.admin[0]!;
      const name = names[0]!;
      await admin.hset(lockKey, 'f', 'v');
      const wrongType = (e: unknown): boolean => {
        isQuorumError(e, [name]);
        assert.match((e as Error).message, /WRONGTYPE/);
        assert.match((e as QuorumError).nodeErrors[0]!.error.message, new RegExp(`${name}.*WRONGTYPE`));
        return true;
      };
      await assert.rejects(m.tryAcquire(resource), wrongType);
      const t = performance.now();
      await assert.rejects(m.acquire(resource, { timeout: 3_000 }), wrongType);
      assert.ok(performance.now() - t < 1_000, 'a node error is not waited out like contention');
      let ran = false;
      await assert.rejects(
        m.withLock(resource, async () => void (ran = true)),
        wrongType,
      );
      assert.equal(ran, false);

      const info = await m.inspect(resource);
      assert.equal(info.holder, null);
      assert.equal(info.nodes.length, 1);
      assert.equal(info.nodes[0]!.node, name);
      assert.match(String(info.nodes[0]!.error?.message), /WRONGTYPE/);
      await m.forceRelease(resource).then(
        (n) => assert.equal(n, 0),
        (e: unknown) => assert.match(String((e as Error).message), /WRONGTYPE/),
      );

      assert.equal(await admin.type(lockKey), 'hash');
      assert.equal(await admin.hget(lockKey, 'f'), 'v');
      assert.equal(await admin.hlen(lockKey), 1);
      assert.equal(await admin.pttl(lockKey), -1, 'no expiry was put on it');
      await admin.del(lockKey);
    });

    test('a hash at the lock key on one of 5 nodes: the others make the quorum, that node is reported, the hash stays', async () => {
      const { m } = await managers.make(kind, urls);
      const resource = `wrongtype-one-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      const reported: Array<{ node: string; message: string; operation: string }> = [];
      m.on('nodeError', (e) => reported.push({ node: e.node, message: e.error.message, operation: e.operation }));
      await s.admin[2]!.hset(lockKey, 'f', 'v');

      const lock = await m.acquire(resource);
      assert.ok(
        reported.some((r) => r.node === names[2] && /WRONGTYPE/.test(r.message) && r.operation === 'acquire'),
        JSON.stringify(reported),
      );
      const info = await m.inspect(resource);
      assert.equal(info.holder, lock.value);
      assert.match(String(info.nodes[2]!.error?.message), /WRONGTYPE/);
      assert.equal(info.nodes.filter((n) => n.error === null && n.owner === lock.value).length, 4);
      await lock.extend();
      assert.deepEqual(await lock.release(), { released: 4, nodes: 5 });
      const again = await m.acquire(resource);
      assert.equal(await m.forceRelease(resource), 4);
      await again.release();
      assert.equal(await s.admin[2]!.hget(lockKey, 'f'), 'v');
      assert.equal(await s.admin[2]!.type(lockKey), 'hash');
      await s.admin[2]!.del(lockKey);
    });

    test('a hash at the lock key on every node: QuorumError naming all five, every hash intact', async () => {
      const { m } = await managers.make(kind, urls);
      const resource = `wrongtype-all-${kind}`;
      const lockKey = keysFor(PREFIX, resource).lock;
      await Promise.all(s.admin.map((a) => a.hset(lockKey, 'f', 'v')));
      await assert.rejects(m.tryAcquire(resource), (e) => {
        isQuorumError(e, names);
        assert.equal((e as QuorumError).nodeErrors.length, 5);
        for (const f of (e as QuorumError).nodeErrors) assert.match(f.error.message, /WRONGTYPE/);
        return true;
      });
      await assert.rejects(m.forceRelease(resource), (e) => isQuorumError(e, names));
      for (const a of s.admin) {
        assert.equal(await a.hget(lockKey, 'f'), 'v');
        await a.del(lockKey);
      }
    });

    test('a non-integer fence counter fails the acquire on that node and is left as it was, with no lock key written', async () => {
      const { m } = await managers.make(kind, [urls[0]!]);
      const resource = `bad-fence-${kind}`;
      const keys = keysFor(PREFIX, resource);
      const admin = s.admin[0]!;
      await (await m.acquire(`${resource}:first`)).release(); // the node's marker exists
      const counter = (await admin.hget(MARKER, 'fence')) as string;
      await admin.hset(MARKER, 'fence', 'not-a-number');
      await assert.rejects(m.tryAcquire(resource), (e) => {
        isQuorumError(e, [names[0]!]);
        assert.match((e as Error).message, /not an integer/);
        return true;
      });
      assert.equal(await admin.hget(MARKER, 'fence'), 'not-a-number');
      assert.equal(await admin.exists(keys.lock), 0);
      await admin.hset(MARKER, 'fence', counter);
      const lock = await m.acquire(resource);
      assert.equal(lock.fence, BigInt(counter) + 1n);
      await lock.release();
    });

    test("inspect() reports a garbage fence counter as that node's error instead of rejecting", async () => {
      const { m } = await managers.make(kind, urls);
      const resource = `bad-fence-inspect-${kind}`;
      const lock = await m.acquire(resource);
      const counter = (await s.admin[1]!.hget(MARKER, 'fence')) as string;
      try {
        await s.admin[1]!.hset(MARKER, 'fence', 'not-a-number');
        const info = await m.inspect(resource); // must resolve: one odd node is that node's problem
        assert.equal(info.holder, lock.value);
        assert.equal(info.nodes.length, 5);
        assert.notEqual(info.nodes[1]!.error, null, 'node 1 reports an error');
        assert.equal(info.nodes.filter((n) => n.error === null && n.owner === lock.value).length, 4);
        assert.equal(info.fence, lock.fence);
      } finally {
        await lock.release();
        await s.admin[1]!.hset(MARKER, 'fence', counter);
      }
    });

    test('fences stay exact beyond 2^53 (Lock.fence is a bigint)', async () => {
      // e.g. a counter seeded from another fencing source; Lua numbers are doubles above 2^53
      const { m } = await managers.make(kind, [urls[0]!]);
      const resource = `big-fence-${kind}`;
      await (await m.acquire(`${resource}:first`)).release(); // the node's marker exists
      const counter = BigInt((await s.admin[0]!.hget(MARKER, 'fence')) ?? '0');
      const seeded = counter > 2n ** 53n ? counter : 2n ** 53n; // raise only: fences handed out before stay below
      await s.admin[0]!.hset(MARKER, 'fence', seeded.toString());
      let last = seeded;
      for (let i = 0; i < 3; i++) {
        const lock = await m.acquire(resource);
        assert.equal(lock.fence, last + 1n, `acquire ${i}: fence ${lock.fence}, counter was ${last}`);
        assert.equal(await s.admin[0]!.hget(MARKER, 'fence'), lock.fence.toString(), 'the fence handed out is the counter stored');
        last = lock.fence;
        await lock.release();
      }
    });

    test('fences never go back across rolling restarts of minorities: an acquire that cannot prove a larger fence fails instead', async () => {
      // Since fence F was issued only 2 of 5 nodes lose data (and one is briefly down): the contract
      // still promises a larger fence to the next holder. Nodes that lost data do not count until a
      // quorum of trustworthy nodes (or every node) answers, so the next acquire either fails fast or
      // hands out more than F; once every node is back, it succeeds with more than F.
      const resource = `rolling-${kind}`;
      const a = await managers.make(kind, urls); // restartQuarantine 'observed'
      for (let i = 0; i < 5; i++) await (await a.m.acquire(resource)).release();

      await Promise.all([s.nodes.nodes[0]!.restart(), s.nodes.nodes[1]!.restart()]);
      await eventually(() => clientsReady(kind, a.clients), 5_000, 10);
      const issued = await a.m.acquire(resource); // nodes 0 and 1 do not count: its quorum is 2, 3, 4
      await issued.release();

      await Promise.all([s.nodes.nodes[2]!.restart(), s.nodes.nodes[3]!.restart()]);
      const b = await managers.make(kind, urls); // never saw the nodes: no time-based quarantine
      await s.nodes.nodes[4]!.kill();
      const early: Lock | null | Error = await b.m.tryAcquire(resource).catch((e: unknown) => e as Error);
      if (early instanceof Error) {
        assert.equal((early as QuorumError).code, 'NO_QUORUM', `unexpected ${String(early)}`);
      } else {
        assert.ok(early !== null && early.fence > issued.fence, `fence ${early?.fence} handed out after ${issued.fence}`);
        await early.release();
      }
      await s.nodes.nodes[4]!.restart();
      await eventually(() => clientsReady(kind, b.clients), 5_000, 10);
      const next = await b.m.acquire(resource, { timeout: 3_000 });
      try {
        assert.ok(next.fence > issued.fence, `fence ${next.fence} handed out after ${issued.fence}`);
      } finally {
        await next.release();
      }
    });

    test('a majority restarted empty is outside the guarantee, but locks stay available once every node answers', async () => {
      const resource = `majority-${kind}`;
      const a = await managers.make(kind, urls, { ...OPTS, restartQuarantine: false });
      await (await a.m.acquire(resource)).release();
      await Promise.all([0, 1, 2].map((i) => s.nodes.nodes[i]!.restart()));
      await eventually(() => clientsReady(kind, a.clients), 5_000, 10);
      const lock = await a.m.acquire(resource, { timeout: 3_000 });
      assert.ok(lock.isValid(), 'acquired after a majority lost its data');
      await lock.release();
    });
  });

  describe(`${kind}: restart quarantine, 3 nodes`, () => {
    const T = 1_500;
    let s: Setup;
    const managers = new Managers();
    let names: string[];
    before(async () => {
      s = await setup(3);
      names = s.nodes.nodes.map((n) => nodeName(n.port));
    });
    after(async () => {
      await managers.closeAll();
      await s?.close();
    });
    afterEach(() => managers.closeAll());

    const quarantined = (nodes: readonly string[]) => (e: unknown) => {
      isQuorumError(e, nodes);
      assert.match((e as Error).message, /restartQuarantine/);
      for (const n of nodes) assert.match((e as QuorumError).nodeErrors.find((f) => f.node === n)!.error.message, /restartQuarantine/);
      return true;
    };

    test("'auto' (default): nodes that lost their data count for nothing until the longest ttl has passed; acquire waits that out", async () => {
      const { m, clients } = await managers.make(kind, s.nodes.urls, { ttl: T, nodeTimeout: NODE_TIMEOUT });
      const resource = `auto-${kind}`;
      const first = await m.acquire(resource);
      await first.release();
      await Promise.all([s.nodes.nodes[0]!.restart(), s.nodes.nodes[1]!.restart()]);
      await eventually(() => clientsReady(kind, clients), 5_000, 10);

      const t0 = performance.now();
      await assert.rejects(m.tryAcquire(resource), quarantined([names[0]!, names[1]!]));
      // A quarantine that outlasts the caller's deadline is a QuorumError saying when the nodes count again ...
      await assert.rejects(m.acquire(resource, { timeout: T / 4 }), quarantined([names[0]!, names[1]!]));
      // ... one that ends before it is waited out.
      const lock = await m.acquire(resource, { timeout: 3 * T });
      const waited = performance.now() - t0;
      assert.ok(waited >= T - 150, `granted ${Math.round(waited)} ms after the loss was seen: the quarantine (ttl ${T}) was respected`);
      assert.ok(waited < T + 1_000, `granted ${Math.round(waited)} ms after the loss was seen: not much later than the quarantine`);
      assert.ok(lock.fence > first.fence, 'node 2 kept the counter');
      assert.equal((await lock.release()).released, 3);
      // Another manager, created after the restart, sees the same: no node is quarantined any more.
      const other = await managers.make(kind, s.nodes.urls, { ttl: 400, nodeTimeout: NODE_TIMEOUT });
      const l2 = await other.m.tryAcquire(resource);
      assert.ok(l2, 'usable by a new manager once the quarantine is over');
      await l2.release();
    });

    test('restartQuarantine: false uses restarted nodes at once', async () => {
      const { m, clients } = await managers.make(kind, s.nodes.urls, { ttl: T, nodeTimeout: NODE_TIMEOUT, restartQuarantine: false });
      const resource = `no-quarantine-${kind}`;
      await (await m.acquire(resource)).release();
      await Promise.all([s.nodes.nodes[0]!.restart(), s.nodes.nodes[1]!.restart()]);
      await eventually(() => clientsReady(kind, clients), 5_000, 10);
      const t = performance.now();
      const lock = await m.tryAcquire(resource);
      assert.ok(lock);
      assert.ok(performance.now() - t < T / 2);
      assert.equal((await lock.release()).released, 3);
    });

    test(`strict (restartQuarantine: ${T}): fresh nodes count for nothing until their data is ${T} ms old`, async () => {
      await Promise.all(s.nodes.nodes.map((n) => n.restart()));
      const options: LockManagerOptions = { ttl: 1_000, nodeTimeout: NODE_TIMEOUT, restartQuarantine: T };
      const { m, clients } = await managers.make(kind, s.nodes.urls, options);
      await eventually(() => clientsReady(kind, clients), 5_000, 10);
      const resource = `strict-${kind}`;
      const t0 = performance.now();
      await assert.rejects(m.tryAcquire(resource), quarantined(names));
      const t1 = performance.now();
      await delay(T / 2);
      if (performance.now() < t0 + T - 150) await assert.rejects(m.tryAcquire(resource), quarantined(names));
      await delay(Math.max(0, t1 + T + 50 - performance.now()));
      const lock = await m.tryAcquire(resource);
      assert.ok(lock, `no lock ${Math.round(performance.now() - t1)} ms after the nodes got their data`);
      await lock.release();
      // strict mode covers managers that never saw the nodes too, and old data is fine for them at once
      const other = await managers.make(kind, s.nodes.urls, options);
      const l2 = await other.m.tryAcquire(resource);
      assert.ok(l2);
      await l2.release();
    });
  });
}
