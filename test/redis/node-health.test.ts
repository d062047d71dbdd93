// Restart quarantine (src/redis/node-health.ts) when a new deployment is still being marked trusted: one
// manager's first acquire marks every node trusted with one request per node, and a manager whose round falls
// between those requests sees a trusted node beside untrusted ones, which is also what a node that lost its
// data looks like. examples/orders (two managers, three fresh nodes) failed so twice: the second manager put two
// of three nodes in a 30 s quarantine and its acquire failed with a QuorumError. Such a node is now suspected,
// and looked at again before the quarantine is taken as fact. Here the bootstrap's marking of nodes 1 and 2 is
// held back in the first manager's clients, so the second manager's round falls between them every time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LockManager, QuorumError } from '../../src/index.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { scripts } from '../../src/redis/scripts/index.js';
import { eventually } from '../support/harness.js';

const MARKER = 'fencelock:{node}:epoch';
const HELD_BACK_MS = 250;

/** A client whose raise-fence requests (the bootstrap's marking, repairs) reach the node `ms` late. */
function holdingBackRaises(url: string, ms: number): Redis {
  const client = new Redis(url);
  const send = client.call.bind(client) as (command: string, ...args: string[]) => Promise<unknown>;
  (client as unknown as { call: typeof send }).call = (command, ...args) => {
    if (args[0] !== scripts.raiseFence.sha && args[0] !== scripts.raiseFence.source) return send(command, ...args);
    return new Promise((resolve) => setTimeout(resolve, ms)).then(() => send(command, ...args));
  };
  return client;
}

describe('restart quarantine while a new deployment bootstraps', () => {
  test('a round that sees the bootstrap half done looks again instead of quarantining the nodes still unmarked', async () => {
    const nodes = await startRedisNodes(3);
    const admin = nodes.urls.map((url) => new Redis(url));
    const clients = [new Redis(nodes.urls[0] as string), ...nodes.urls.slice(1).map((url) => holdingBackRaises(url, HELD_BACK_MS))];
    const first = new LockManager(clients, { ttl: 30_000, nodeTimeout: 1_000 });
    const second = new LockManager(nodes.urls, { ttl: 30_000, nodeTimeout: 200 });
    const quarantined: string[] = [];
    second.on('nodeQuarantined', ({ node }) => quarantined.push(node));
    try {
      const bootstrap = first.acquire('first');
      // Node 0 is marked trusted, nodes 1 and 2 not yet: the second manager's round sees exactly that.
      await eventually(async () => (await (admin[0] as Redis).hget(MARKER, 'trusted')) === '1', 5_000, 5);
      const marks = await Promise.all(admin.map((a) => a.hget(MARKER, 'trusted')));
      assert.deepEqual(marks, ['1', '0', '0'], 'the second round falls between the bootstrap’s requests');
      const lock = await second.acquire('second', { timeout: 5_000 });
      assert.ok(lock.isValid());
      assert.deepEqual(quarantined, [], 'no node was quarantined: none had lost its data');
      await lock.release();
      await (await bootstrap).release();
    } finally {
      await Promise.all([first.close(), second.close()]);
      for (const c of [...clients, ...admin]) c.disconnect();
      await nodes.stop();
    }
  });

  test('a node that did lose its data, seen so first by a new manager, is quarantined after the second look', async () => {
    const nodes = await startRedisNodes(3);
    const [n0, n1] = nodes.nodes as [(typeof nodes.nodes)[0], (typeof nodes.nodes)[0]];
    try {
      const before = new LockManager(nodes.urls, { ttl: 30_000, nodeTimeout: 200 });
      await (await before.acquire('r')).release(); // every node trusted, each has recorded ttl 30 s
      await before.close();
      await n1.restart(); // lost its data
      await n0.kill(); // node 1 is needed for a quorum now

      const later = new LockManager(nodes.urls, { ttl: 30_000, nodeTimeout: 200 });
      const quarantined: string[] = [];
      later.on('nodeQuarantined', ({ node }) => quarantined.push(node));
      try {
        const start = performance.now();
        const failed = await later.acquire('r', { timeout: 5_000 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        const waited = performance.now() - start;
        assert.ok(failed instanceof QuorumError, `expected a QuorumError, got ${String(failed)}`);
        assert.match(failed.message, /lost its data: in restart quarantine, counts again in \d+ ms/);
        // The second look came after the settle window (2 × nodeTimeout), not after the 5 s timeout.
        assert.ok(waited >= 400 && waited < 3_000, `failed after ${Math.round(waited)} ms`);
        assert.deepEqual(quarantined, [n1.url.replace('redis://', '')], 'the quarantine is announced once it is fact');
      } finally {
        await later.close();
      }
    } finally {
      await nodes.stop();
    }
  });
});
