// Release notifications (notifications.ts) on real redis-server nodes: when the last listener of a channel stops
// (a waiter that just got the lock), the UNSUBSCRIBE goes out after that turn, not before its caller goes on; a
// listener that comes back meanwhile finds the subscription in place and nothing is sent.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { toNodes } from '../../src/redis/adapters/index.js';
import { ReleaseNotifications } from '../../src/redis/notifications.js';
import { eventually, makeClients, setup, type Setup } from '../support/harness.js';
import { channelSubscribers, commandCalls } from '../lock-manager/helpers.js';

/** SUBSCRIBE and UNSUBSCRIBE commands all nodes have run so far. */
async function pubsubCalls(admin: readonly Redis[]): Promise<{ subscribe: number; unsubscribe: number }> {
  const sum = (calls: number[]): number => calls.reduce((a, b) => a + b, 0);
  return { subscribe: sum(await commandCalls(admin, ['subscribe'])), unsubscribe: sum(await commandCalls(admin, ['unsubscribe'])) };
}

for (const kind of ['ioredis', 'node-redis'] as const) {
  describe(`ReleaseNotifications (${kind})`, () => {
    let env: Setup;
    let clients: Awaited<ReturnType<typeof makeClients>>;
    let notifications: ReleaseNotifications;
    before(async () => {
      env = await setup(3);
      clients = await makeClients(kind, env.nodes.urls);
      notifications = new ReleaseNotifications(toNodes(clients.list), 1_000);
    });
    after(async () => {
      await clients.close();
      await env.close();
    });

    test('the last listener leaves after its turn; one that comes back meanwhile keeps the subscription', async () => {
      const channel = `linger-${kind}:released`;
      const first = notifications.watch([channel], () => undefined);
      await first.ready;
      await eventually(async () => (await channelSubscribers(env.admin, channel)).every((n) => n === 1), 5_000);
      const before = await pubsubCalls(env.admin);

      // Stopped and watched again in the same turn: the subscription stays, nothing is sent.
      first.stop();
      const heard: string[] = [];
      const second = notifications.watch([channel], (_node, message) => heard.push(message));
      assert.equal(second.wasReady, true, 'the channel is still subscribed');
      await new Promise((resolve) => setImmediate(resolve));
      await env.admin[0]?.publish(channel, 'hello');
      await eventually(() => heard.length === 1, 2_000);
      assert.deepEqual(await channelSubscribers(env.admin, channel), [1, 1, 1]);
      assert.deepEqual(await pubsubCalls(env.admin), before, 'no SUBSCRIBE or UNSUBSCRIBE went out');

      // The last listener stops: the subscription goes once the turn is over.
      second.stop();
      assert.equal(notifications.isReady([channel]), true, 'still in place within the turn');
      await eventually(async () => (await channelSubscribers(env.admin, channel)).every((n) => n === 0), 2_000);
      assert.equal(notifications.isReady([channel]), false);
      assert.equal((await pubsubCalls(env.admin)).unsubscribe, before.unsubscribe + 3, 'one UNSUBSCRIBE per node');
    });
  });
}
