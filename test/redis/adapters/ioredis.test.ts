// When the ioredis driver corks its socket (src/redis/adapters/ioredis.ts writeOrCork): a turn's lone request is
// written at once, so that on several nodes the first node works while the requests to the others are built; a
// turn that follows one with several requests (a burst of callers) is corked from its first request, so that its
// requests leave in one write. Real redis-server, a real ioredis socket: its `writableCorked` is what is checked,
// and every request still gets its own answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { IoredisDriver, type IoredisLike } from '../../../src/redis/adapters/ioredis.js';
import { startRedisNode, type LocalRedisNode } from '../../../src/testing/index.js';

describe('ioredis driver: when the socket is corked', () => {
  let node: LocalRedisNode;
  let client: Redis;
  let driver: IoredisDriver;
  const corked = (): number => (client.stream as unknown as { writableCorked: number }).writableCorked;
  /** The end of this turn of the event loop: what a turn sent has left, and the next turn begins. */
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  before(async () => {
    node = await startRedisNode();
    client = new Redis(node.url, { lazyConnect: true });
    await client.connect();
    driver = new IoredisDriver(node.url, client as unknown as IoredisLike, false);
  });
  after(async () => {
    client.disconnect();
    await node.stop();
  });

  test('a lone request is written at once, and the turn after it starts uncorked too', async () => {
    await nextTurn();
    for (let turn = 0; turn < 2; turn++) {
      const answer = driver.send(['echo', `lone ${turn}`]);
      assert.equal(corked(), 0, `turn ${turn}: not held for the end of the turn`);
      assert.equal(await answer, `lone ${turn}`);
      await nextTurn();
    }
  });

  test('a turn of several requests corks from its second; the next turn from its first; a lone turn then lets it go', async () => {
    await nextTurn();
    const first = [driver.send(['echo', 'a'])];
    assert.equal(corked(), 0, 'the first of the turn is written at once (the turn before sent one)');
    first.push(driver.send(['echo', 'b']), driver.send(['echo', 'c']));
    assert.equal(corked(), 1, 'the rest of the turn waits for its end');
    await nextTurn();
    assert.equal(corked(), 0, 'uncorked at the end of the turn');
    assert.deepEqual(await Promise.all(first), ['a', 'b', 'c']);

    await nextTurn(); // the turn that sent a, b, c ended with several
    const second = [driver.send(['echo', 'd'])];
    assert.equal(corked(), 1, 'after a turn of several, the first request is corked too');
    second.push(driver.send(['echo', 'e']));
    await nextTurn();
    assert.equal(corked(), 0);
    assert.deepEqual(await Promise.all(second), ['d', 'e']);

    await nextTurn();
    const lone = driver.send(['echo', 'f']);
    assert.equal(corked(), 1, 'the turn before sent several: still corked from the first');
    await nextTurn();
    assert.equal(await lone, 'f');
    await nextTurn();
    const again = driver.send(['echo', 'g']);
    assert.equal(corked(), 0, 'after a lone turn, written at once again');
    assert.equal(await again, 'g');
  });

  test('a long turn lets the cork go every few requests and answers every request in order', async () => {
    await nextTurn();
    const sent = Array.from({ length: 50 }, (_, i) => driver.send(['echo', String(i)]));
    assert.ok(corked() <= 1, `never corked twice over (${corked()})`);
    await nextTurn();
    assert.equal(corked(), 0);
    assert.deepEqual(
      await Promise.all(sent),
      Array.from({ length: 50 }, (_, i) => String(i)),
    );
  });
});
