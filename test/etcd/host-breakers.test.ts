// The owned etcd3 client's member breakers (src/etcd/host-breakers.ts), pure logic: a member that failed 3
// calls in a row is skipped while another member is not, and never are all members skipped at once (issue 23:
// after a leader SIGKILL, etcd3's own breakers all opened and every call failed without I/O for up to 5 s).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HostBreakers, type HostPolicy } from '../../src/etcd/host-breakers.js';

const failing = (policy: HostPolicy): Promise<unknown> =>
  policy.execute(() => Promise.reject(new Error('deadline exceeded'))).catch((error: unknown) => error);
const calls = (policy: HostPolicy): Promise<string> => policy.execute(() => 'called').catch((error: Error) => error.message);

describe('etcd: member breakers', () => {
  test('a member that failed 3 calls in a row is skipped while another member is not', async () => {
    const breakers = new HostBreakers(() => true);
    const [a, b] = [breakers.forHost(), breakers.forHost()];
    for (let i = 0; i < 3; i++) await failing(a!);
    assert.match(await calls(a!), /circuit breaker is open/);
    assert.equal(await calls(b!), 'called');
  });

  test('when every member failed 3 calls in a row, a call still goes through; its success closes that breaker only', async () => {
    const breakers = new HostBreakers(() => true);
    const [a, b, c] = [breakers.forHost(), breakers.forHost(), breakers.forHost()];
    for (const host of [a!, b!, c!]) for (let i = 0; i < 3; i++) await failing(host);
    assert.equal(await calls(b!), 'called');
    // b answers again: the others are skipped while it is there.
    assert.match(await calls(a!), /circuit breaker is open/);
    assert.match(await calls(c!), /circuit breaker is open/);
    assert.equal(await calls(b!), 'called');
  });

  test('a stream returned (a keep-alive, a watch) is no success: it does not close a breaker', async () => {
    const breakers = new HostBreakers(() => true);
    const [a] = [breakers.forHost(), breakers.forHost()];
    const stream = { on: () => undefined, write: () => true };
    // As etcd3 uses it: the stream returned through execute, its error later through execute too (markFailed).
    for (let i = 0; i < 3; i++) {
      await a!.execute(() => stream);
      await failing(a!);
    }
    assert.match(await calls(a!), /circuit breaker is open/);
  });

  test('errors that do not count (not recoverable) never open a breaker', async () => {
    const breakers = new HostBreakers(() => false);
    const [a] = [breakers.forHost(), breakers.forHost()];
    for (let i = 0; i < 5; i++) await failing(a!);
    assert.equal(await calls(a!), 'called');
  });
});
