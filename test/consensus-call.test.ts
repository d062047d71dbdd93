// The waits of an acquire on a consensus store (src/consensus-call.ts) end as soon as the call's signal aborts,
// also when it aborted before the wait began: a manager closed while its waiter's store call was in flight
// (the etcd outage fixture of test/process-exit.test.ts) used to leave the waiter to its whole timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { orAbort, sleep } from '../src/consensus-call.js';

test('sleep: rejects with the reason of a signal that aborted before it began, and of one that aborts during it', async () => {
  const closed = new Error('closed');
  const before = AbortSignal.abort(closed);
  const started = performance.now();
  await assert.rejects(sleep(60_000, before), (e) => e === closed);
  const during = new AbortController();
  const sleeping = sleep(60_000, during.signal);
  during.abort(closed);
  await assert.rejects(sleeping, (e) => e === closed);
  assert.ok(performance.now() - started < 5_000, 'neither waited out its 60 s');
});

test('orAbort: the work’s outcome, or the signal’s reason as soon as it aborts; the abandoned work’s failure is nobody’s', async () => {
  assert.equal(await orAbort(Promise.resolve(7), new AbortController().signal), 7);
  const closed = new Error('closed');
  const controller = new AbortController();
  let fail!: (e: Error) => void;
  const work = new Promise<number>((_, reject) => (fail = reject));
  const raced = orAbort(work, controller.signal);
  controller.abort(closed);
  await assert.rejects(raced, (e) => e === closed);
  fail(new Error('the store call failed later')); // no unhandled rejection: the test runner would report it
  await assert.rejects(orAbort(new Promise<never>(() => undefined), AbortSignal.abort(closed)), (e) => e === closed);
});
