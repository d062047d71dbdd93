// node:diagnostics_channel hooks: what an APM tool subscribing to fencelock's channels receives.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import {
  DIAGNOSTICS_CHANNELS,
  Lock,
  LockLostError,
  LockTimeoutError,
  type AcquireTraceContext,
  type LockEvents,
  type LockManager,
} from '../../src/index.js';
import { setup, type Setup } from '../support/harness.js';
import { keysOf, readyManager, uniqueResource } from '../lock-manager/helpers.js';

const OPTIONS = { ttl: 2000, nodeTimeout: 90, acquireTimeout: 5000 };

type Phase = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error';

/** Records every acquire trace event, in order, until `stop()`. */
function recordAcquireTraces(): { events: Array<{ phase: Phase; context: AcquireTraceContext }>; stop(): void } {
  const channel = diagnostics.tracingChannel<unknown, AcquireTraceContext>(DIAGNOSTICS_CHANNELS.acquire);
  const events: Array<{ phase: Phase; context: AcquireTraceContext }> = [];
  const on = (phase: Phase) => (context: AcquireTraceContext) => events.push({ phase, context });
  const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') };
  channel.subscribe(handlers);
  return { events, stop: () => channel.unsubscribe(handlers) };
}

/** Collects what a plain channel publishes until `stop()`. */
function recordChannel(name: string): { messages: unknown[]; stop(): void } {
  const messages: unknown[] = [];
  const onMessage = (message: unknown): void => void messages.push(message);
  diagnostics.subscribe(name, onMessage);
  return { messages, stop: () => diagnostics.unsubscribe(name, onMessage) };
}

describe('diagnostics channels (1 node)', { concurrency: false }, () => {
  let env: Setup | undefined;
  let locks: LockManager;
  before(async () => {
    env = await setup(1);
    locks = await readyManager(env, 'ioredis', OPTIONS);
  });
  after(async () => {
    await env?.close();
  });

  test('acquire is a tracing channel: start, end, asyncStart, asyncEnd on one context, with outcome and result', async () => {
    const traces = recordAcquireTraces();
    try {
      const resource = uniqueResource('traced');
      const lock = await locks.acquire(resource, { ttl: 1500, timeout: 800 });
      try {
        assert.deepEqual(
          traces.events.map((e) => e.phase),
          ['start', 'end', 'asyncStart', 'asyncEnd'],
        );
        const context = traces.events[0]!.context;
        assert.ok(
          traces.events.every((e) => e.context === context),
          'every phase gets the same context object',
        );
        assert.equal(context.method, 'acquire');
        assert.deepEqual(context.resources, [resource]);
        assert.equal(context.ttl, 1500);
        assert.equal(context.timeout, 800);
        assert.equal(context.outcome, 'acquired');
        assert.equal(context.result, lock);
        assert.ok(context.result instanceof Lock, 'result is the Lock');

        // a busy tryAcquire is no error: it resolves null
        traces.events.length = 0;
        assert.equal(await locks.tryAcquire(resource), null);
        assert.deepEqual(
          traces.events.map((e) => e.phase),
          ['start', 'end', 'asyncStart', 'asyncEnd'],
        );
        assert.equal(traces.events[0]!.context.method, 'tryAcquire');
        assert.equal(traces.events[0]!.context.outcome, 'busy');
        assert.equal(traces.events[0]!.context.result, null);

        // a timeout publishes error, with the error on the context
        traces.events.length = 0;
        const failure = await locks.acquire(resource, { timeout: 50 }).catch((e: unknown) => e);
        assert.ok(failure instanceof LockTimeoutError, `rejected with ${String(failure)}`);
        assert.deepEqual(
          traces.events.map((e) => e.phase),
          ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
        );
        const failed = traces.events[0]!.context;
        assert.equal(failed.outcome, 'timeout');
        assert.equal(failed.error, failure);
      } finally {
        await lock.release();
      }
    } finally {
      traces.stop();
    }
  });

  test('a store bound to the start channel is active in work the acquire does (how an APM parents its spans)', async () => {
    const channel = diagnostics.tracingChannel<unknown, AcquireTraceContext>(DIAGNOSTICS_CHANNELS.acquire);
    const store = new AsyncLocalStorage<{ span: AcquireTraceContext }>();
    channel.start.bindStore(store, (context) => ({ span: context }));
    // recorded too, for the context to compare the store's value with
    const traces = recordAcquireTraces();
    let seen: { span: AcquireTraceContext } | undefined;
    const onAcquired = (): void => {
      seen = store.getStore();
    };
    locks.on('acquired', onAcquired);
    try {
      const resource = uniqueResource('stored');
      await (await locks.withLock(resource, async (lock) => lock)).release();
      assert.ok(seen, "the store was active in the 'acquired' listener");
      assert.equal(seen.span, traces.events[0]!.context);
      assert.equal(seen.span.method, 'withLock');
      assert.equal(store.getStore(), undefined, 'and not outside the acquire');
    } finally {
      locks.off('acquired', onAcquired);
      channel.start.unbindStore(store);
      traces.stop();
    }
  });

  test('release, extend and lost publish the same payload objects their events carry', async () => {
    const release = recordChannel(DIAGNOSTICS_CHANNELS.release);
    const extend = recordChannel(DIAGNOSTICS_CHANNELS.extend);
    const lost = recordChannel(DIAGNOSTICS_CHANNELS.lost);
    const events = { released: [] as unknown[], extended: [] as unknown[], lost: [] as unknown[] };
    const onReleased = (e: LockEvents['released'][0]): void => void events.released.push(e);
    const onExtended = (e: LockEvents['extended'][0]): void => void events.extended.push(e);
    const onLost = (e: LockEvents['lost'][0]): void => void events.lost.push(e);
    locks.on('released', onReleased).on('extended', onExtended).on('lost', onLost);
    try {
      const resource = uniqueResource('published');
      const lock = await locks.acquire(resource);
      await lock.extend(1800);
      await lock.release();
      assert.equal(extend.messages.length, 1);
      assert.equal(extend.messages[0], events.extended[0], 'extend channel: the extended event payload');
      assert.deepEqual(Object.keys(extend.messages[0] as object).sort(), ['fence', 'remaining', 'resources', 'ttl']);
      assert.equal((extend.messages[0] as LockEvents['extended'][0]).ttl, 1800);
      assert.equal(release.messages.length, 1);
      assert.equal(release.messages[0], events.released[0], 'release channel: the released event payload');
      assert.deepEqual(release.messages[0], { resources: [resource], fence: lock.fence, released: 1, nodes: 1 });

      const doomed = uniqueResource('doomed');
      const victim = await locks.acquire(doomed);
      await env!.admin[0]!.del(keysOf(doomed).lock);
      await assert.rejects(victim.extend(), LockLostError);
      assert.equal(lost.messages.length, 1);
      assert.equal(lost.messages[0], events.lost[0], 'lost channel: the lost event payload');
      const message = lost.messages[0] as LockEvents['lost'][0];
      assert.deepEqual(message.resources, [doomed]);
      assert.equal(message.fence, victim.fence);
      assert.ok(message.error instanceof LockLostError, 'lost carries the LockLostError');
    } finally {
      locks.off('released', onReleased).off('extended', onExtended).off('lost', onLost);
      release.stop();
      extend.stop();
      lost.stop();
    }
  });
});
