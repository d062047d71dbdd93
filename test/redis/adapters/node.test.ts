// When a request's timeout blames the node (src/redis/adapters/node.ts): only for time the node had to answer.
// This process's own stalls (a long check phase, a long synchronous spell) are not the node's silence. Pure
// timing logic: the connection is a scripted one whose answers the test releases, so each case happens on
// every run (in CI a starved process met these by chance; in-flight.test.ts has the same on real nodes).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeTimeoutError } from '../../../src/errors.js';
import { DriverNode } from '../../../src/redis/adapters/node.js';
import { Script, type ClientDriver } from '../../../src/redis/adapters/types.js';

const T = 40;
const SCRIPT = new Script('probe', 'return 1');

/** A connection that is always ready and answers a command only when the test says so. */
class ScriptedConnection implements ClientDriver {
  readonly name = 'scripted:1';
  readonly isCluster = false;
  readonly pending: Array<{ args: readonly string[]; answer: (value: unknown) => void }> = [];
  state(): 'ready' {
    return 'ready';
  }
  whenReady(callback: () => void): () => void {
    callback();
    return () => undefined;
  }
  send(args: readonly string[]): Promise<unknown> {
    return new Promise((answer) => this.pending.push({ args, answer }));
  }
  subscribe(): Promise<void> {
    return new Promise(() => undefined); // never answers: a request that is not gated and times out plainly
  }
  unsubscribe(): Promise<void> {
    return Promise.resolve();
  }
  onError(): void {}
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** How a request ended: its value, or its error. */
function outcome(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (value) => value,
    (error: unknown) => error,
  );
}

describe('DriverNode: a timeout blames the node only for time it had', () => {
  test('a check phase that runs long before the verdict: judged as of the socket reads, the answer read next wins', async () => {
    const conn = new ScriptedConnection();
    const node = new DriverNode(conn);
    // A subscribe (not gated: it times out plainly) with the same deadline as the request below: its expiry's
    // failure runs first in the check phase and keeps the process busy for 12 timeouts, longer than the patience
    // for a busy node (LIVE_NODE_PATIENCE = 10 timeouts), as hundreds of a frozen node's failures did in CI.
    const subscribed = node
      .subscribe('c', () => undefined, T)
      .catch(() => {
        busyFor(12 * T);
        // The node's answer to the request arrived during that spell; it is read at the next turn.
        setImmediate(() => conn.pending[1]!.answer('answer'));
      });
    const ahead = node.run(SCRIPT, ['k'], [], T);
    const request = outcome(node.run(SCRIPT, ['k'], [], T));
    // The node answers the request ahead of ours after ours was sent: it is busy, not hung.
    setTimeout(() => conn.pending[0]!.answer('ahead'), T / 4);
    assert.equal(await ahead, 'ahead');
    await subscribed;
    assert.equal(await request, 'answer', 'the request ran out of patience only in this process’s own check phase');
    assert.equal(node.unresponsive, false);
  });

  test('a request handed over just before a long synchronous spell: its timer fires late, the node gets a timeout from then', async () => {
    const conn = new ScriptedConnection();
    const node = new DriverNode(conn);
    const request = outcome(node.run(SCRIPT, ['k'], [], T));
    // The process stays busy past the deadline; a corked write would leave only now, and the node answers T/2 later.
    busyFor(2 * T);
    setTimeout(() => conn.pending[0]!.answer('answer'), T / 2);
    assert.equal(await request, 'answer', 'the node is not blamed for the spell');
    assert.equal(node.unresponsive, false);
  });

  test('a hung node is still found after such a spell, one timeout later, and judged unresponsive', async () => {
    const conn = new ScriptedConnection();
    const node = new DriverNode(conn);
    const started = performance.now();
    const request = outcome(node.run(SCRIPT, ['k'], [], T));
    busyFor(2 * T);
    const error = await request;
    const took = performance.now() - started;
    assert.ok(error instanceof NodeTimeoutError, `a timeout error: ${String(error)}`);
    assert.equal(error.node, 'scripted:1');
    assert.ok(took >= 3 * T - 2, `one more timeout after the spell before the verdict (${took.toFixed(0)} ms)`);
    assert.equal(node.unresponsive, true, 'no answer at all since it was sent: the node is unresponsive');
  });
});
