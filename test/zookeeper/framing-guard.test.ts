// node-zookeeper-client throws out of its socket handler when the bytes it reads are out of step with their
// framing (src/zookeeper/framing-guard.ts): unguarded, that ends the process; guarded, the connection is
// dropped and the client connects again within its session. On a real server, with the bytes of a reply cut
// short delivered to the client's live socket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import { guardFraming } from '../../src/zookeeper/framing-guard.js';
import type { Client } from '../../src/zookeeper/client-types.js';
import { startZooKeeperEnsemble, type LocalZooKeeperEnsemble } from '../../src/testing/index.js';
import { requireZooKeeper } from '../support/optional.js';

/** A reply of 4 bytes: its header (xid, zxid, error code: 16 bytes) runs past its end. */
const CUT_SHORT = Buffer.from([0, 0, 0, 4, 0, 0, 0, 1]);

interface Wire {
  socket: { emit(event: 'data', buffer: Buffer): boolean };
}

describe('zookeeper: a reply out of step with its framing', { skip: requireZooKeeper('ZooKeeper (the client’s framing guard)') }, () => {
  let ensemble: LocalZooKeeperEnsemble;
  const clients: zookeeper.Client[] = [];

  async function connected(guard: boolean): Promise<zookeeper.Client> {
    const client = zookeeper.createClient(ensemble.connectionString, { retries: 0, spinDelay: 100 });
    clients.push(client);
    if (guard) guardFraming(client as unknown as Client);
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
    return client;
  }
  const wire = (client: zookeeper.Client): Wire => (client as unknown as { connectionManager: Wire }).connectionManager;
  const exists = (client: zookeeper.Client, path: string): Promise<boolean> =>
    new Promise((resolve, reject) => client.exists(path, (error, stat) => (error ? reject(error) : resolve(stat !== null))));

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ servers: 1 });
  });
  after(async () => {
    for (const c of clients) c.close();
    await ensemble?.stop();
  });

  test('unguarded, the library throws out of its socket handler (an uncaught exception in a real process)', async () => {
    const client = await connected(false);
    assert.throws(() => wire(client).socket.emit('data', CUT_SHORT), /out of buffer range|Unknown code|RangeError|offset/i);
  });

  test('guarded, the connection is dropped instead: the client connects again in the same session and answers', async () => {
    const client = await connected(true);
    const session = client.getSessionId().toString('hex');
    const disconnected = new Promise<void>((resolve) => client.once('disconnected', () => resolve()));
    const reconnected = new Promise<void>((resolve) => disconnected.then(() => client.once('connected', () => resolve())));
    assert.doesNotThrow(() => wire(client).socket.emit('data', CUT_SHORT));
    await disconnected;
    await reconnected;
    assert.equal(client.getSessionId().toString('hex'), session, 'the same session: ephemeral znodes (held locks) survive');
    assert.equal(await exists(client, '/'), true, 'the client answers after it connected again');
  });
});
