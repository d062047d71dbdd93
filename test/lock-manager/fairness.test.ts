// Fair waiting: the lock goes to waiters in arrival order across managers (processes), a releaser cannot
// barge ahead of them, and a waiter that gives up or dies does not block the queue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { LockTimeoutError, type Lock, type LockManager } from '../../src/index.js';
import { tsEntry } from '../support/entry.js';
import { CLIENT_KINDS, eventually } from '../support/harness.js';
import { NODE_COUNTS, queued, readyManager, subscribers, uniqueResource, within, withNodeSets } from './helpers.js';

const OPTIONS = { ttl: 5000, nodeTimeout: 100, acquireTimeout: 5000 };

/** A child process that waits in line for `resource` until SIGKILLed (test/fixtures/queued-waiter.ts). */
function queuedWaiter(resource: string, urls: readonly string[]): ChildProcess {
  return spawn(process.execPath, [...tsEntry('test/fixtures/queued-waiter.ts'), resource, ...urls], { stdio: 'ignore' });
}

/** On how many nodes someone listens for the resource's releases. */
async function lockHolderSubscribed(admin: Parameters<typeof queued>[0], resource: string): Promise<number> {
  return (await subscribers(admin, resource)).filter((n) => n > 0).length;
}

/** Resolves once `count` waiters are queued for `resource` on every node. */
function queueLength(admin: Parameters<typeof queued>[0], resource: string, count: number, timeoutMs = 5000): Promise<void> {
  return eventually(async () => (await queued(admin, resource)).every((q) => q.length === count), timeoutMs);
}

withNodeSets('fair waiting', NODE_COUNTS, (env) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: waiters in different managers get the lock in arrival order`, async () => {
      const { admin } = env();
      const resource = uniqueResource('order');
      const managers: LockManager[] = [];
      for (let i = 0; i < 4; i++) managers.push(await readyManager(env(), kind, OPTIONS));
      const holder = await (managers[0] as LockManager).acquire(resource);
      const order: number[] = [];
      const waiting: Array<Promise<void>> = [];
      // Each waiter is queued before the next one starts, so arrival order is known.
      for (let i = 1; i < managers.length; i++) {
        waiting.push(
          (managers[i] as LockManager).acquire(resource).then(async (lock) => {
            order.push(i);
            await lock.release();
          }),
        );
        await queueLength(admin, resource, i);
      }
      await holder.release();
      await within(Promise.all(waiting), 5000, 'waiters');
      assert.deepEqual(order, [1, 2, 3]);
      assert.deepEqual(
        await queued(admin, resource),
        admin.map(() => []),
        'queues are empty again',
      );
    });

    test(`${kind}: a caller that releases and asks again at once does not barge ahead of a waiter`, async () => {
      const { admin } = env();
      const resource = uniqueResource('barge');
      const a = await readyManager(env(), kind, OPTIONS);
      const b = await readyManager(env(), kind, OPTIONS);
      let lock: Lock = await a.acquire(resource);
      const winners: string[] = [];
      const waiter = b.acquire(resource).then(async (l) => {
        winners.push('waiter');
        await l.release();
      });
      await queueLength(admin, resource, 1);
      // The releaser re-asks the moment its release returns, before the waiter's notification can arrive.
      await lock.release();
      lock = await a.acquire(resource);
      winners.push('releaser');
      await lock.release();
      await within(waiter, 5000, 'waiter');
      assert.deepEqual(winners, ['waiter', 'releaser']);
    });

    test(`${kind}: a waiter that times out leaves the queue, and the next one is not held up by it`, async () => {
      const { admin } = env();
      const resource = uniqueResource('leave');
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const quitter = await readyManager(env(), kind, OPTIONS);
      const next = await readyManager(env(), kind, OPTIONS);
      const holder = await holderManager.acquire(resource);
      const gaveUp = quitter.acquire(resource, { timeout: 300 }).then(
        () => assert.fail('the quitter should time out'),
        (error: unknown) => assert.ok(error instanceof LockTimeoutError, `LockTimeoutError expected, got ${String(error)}`),
      );
      await queueLength(admin, resource, 1);
      const waiting = next.acquire(resource);
      await queueLength(admin, resource, 2);
      await gaveUp;
      await queueLength(admin, resource, 1);
      const started = performance.now();
      await holder.release();
      const lock = await within(waiting, 2000, 'next waiter');
      const handoff = performance.now() - started;
      await lock.release();
      assert.ok(handoff < 500, `the next waiter got the lock ${handoff.toFixed(0)} ms after the release`);
    });

    test(`${kind}: fair: false waiters stay out of the queue and still wake on a release`, async () => {
      const { admin } = env();
      const resource = uniqueResource('unfair');
      const a = await readyManager(env(), kind, OPTIONS);
      const b = await readyManager(env(), kind, OPTIONS);
      const holder = await a.acquire(resource);
      const retries: string[] = [];
      b.on('retry', (r) => retries.push(r.reason));
      // Backoff pinned far above the handoff, so only the notification can explain a quick handoff.
      const waiting = b.acquire(resource, { fair: false, retry: { minDelay: 2000, maxDelay: 2000, jitter: 'none' } });
      await eventually(async () => (await lockHolderSubscribed(admin, resource)) === admin.length, 5000);
      assert.deepEqual(
        await queued(admin, resource),
        admin.map(() => []),
        'an unfair waiter is not queued',
      );
      const started = performance.now();
      await holder.release();
      const lock = await within(waiting, 1500, 'unfair waiter');
      const handoff = performance.now() - started;
      await lock.release();
      assert.ok(handoff < 1000, `handoff took ${handoff.toFixed(0)} ms`);
      assert.ok(retries.includes('notified'), `woken by a notification, saw ${retries.join(',')}`);
    });

    test(`${kind}: waiters in separate processes get the lock in arrival order`, async () => {
      const { admin, nodes } = env();
      const resource = uniqueResource('procs');
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const holder = await holderManager.acquire(resource, { ttl: 60_000 }); // outlasts the children's start-up on a loaded machine
      const children: ChildProcess[] = [];
      const outputs: Array<Promise<string>> = [];
      try {
        // Each child is queued before the next one starts, so arrival order is known.
        for (let i = 0; i < 3; i++) {
          const child = spawn(process.execPath, [...tsEntry('test/fixtures/fair-waiter.ts'), `w${i}`, resource, ...nodes.urls], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          children.push(child);
          outputs.push(
            new Promise((resolve) => {
              let out = '';
              child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
              child.on('exit', () => resolve(out));
            }),
          );
          await queueLength(admin, resource, i + 1, 20_000); // a child process takes a moment to start
        }
        await holder.release();
        const reports = (await within(Promise.all(outputs), 20_000, 'child waiters')).map(
          (o) => JSON.parse(o.trim()) as { name: string; at: number; fence: string },
        );
        const order = [...reports].sort((a, b) => a.at - b.at).map((r) => r.name);
        assert.deepEqual(order, ['w0', 'w1', 'w2'], 'served in the order they queued');
        const fences = [...reports].sort((a, b) => a.at - b.at).map((r) => BigInt(r.fence));
        assert.ok(fences[0]! > holder.fence && fences[1]! > fences[0]! && fences[2]! > fences[1]!, `fences ${fences.join(',')} increase`);
      } finally {
        for (const c of children) c.kill('SIGKILL');
      }
    });

    test(`${kind}: a lock handed to a dead waiter is free again once its place in line lapses, for tryAcquire too`, async () => {
      const { admin, nodes } = env();
      const resource = uniqueResource('try-free');
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const other = await readyManager(env(), kind, OPTIONS);
      const holder = await holderManager.acquire(resource, { ttl: 60_000 }); // outlasts the children's start-up on a loaded machine
      const child = queuedWaiter(resource, nodes.urls);
      try {
        await queueLength(admin, resource, 1, 20_000);
        child.kill('SIGKILL');
        // The release hands the lock to the dead waiter if its place is still live (release.lua): it then
        // holds it only as long as that place would have lasted (500 ms), never the holder's 60 s.
        const released = performance.now();
        await holder.release();
        let lock: Lock | null = null;
        await eventually(async () => (lock = await other.tryAcquire(resource)) !== null, 5000);
        const waited = performance.now() - released;
        assert.ok(waited < 2500, `tryAcquire got the lock ${waited.toFixed(0)} ms after the release`);
        assert.equal(await holderManager.tryAcquire(resource), null, 'held now: null');
        await (lock as unknown as Lock).release();
      } finally {
        child.kill('SIGKILL');
      }
    });

    test(`${kind}: a waiter whose process died blocks the queue only until its lease runs out`, async () => {
      const { admin, nodes } = env();
      const resource = uniqueResource('dead');
      const holderManager = await readyManager(env(), kind, OPTIONS);
      const survivor = await readyManager(env(), kind, OPTIONS);
      const holder = await holderManager.acquire(resource, { ttl: 60_000 }); // outlasts the children's start-up on a loaded machine
      const child = queuedWaiter(resource, nodes.urls);
      try {
        await queueLength(admin, resource, 1, 20_000); // a child process takes a moment to start
        const waiting = survivor.acquire(resource);
        await queueLength(admin, resource, 2);
        child.kill('SIGKILL');
        await holder.release();
        const started = performance.now();
        const lock = await within(waiting, 5000, 'survivor');
        const waited = performance.now() - started;
        await lock.release();
        // The dead waiter's lease (500 ms), then the survivor's keep-place interval (at most retry.maxDelay, 1 s).
        assert.ok(waited < 2500, `the survivor waited ${waited.toFixed(0)} ms behind a dead waiter`);
      } finally {
        child.kill('SIGKILL');
      }
    });
  }
});
