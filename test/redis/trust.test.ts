// Which grants count toward a quorum: pure decisions, no Redis.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countGrants, shortfall, type NodeAnswer } from '../../src/redis/trust.js';

const g = (trusted: boolean, quarantine = 0): NodeAnswer => ({ kind: 'granted', trusted, quarantine, wait: 0, ahead: false });
const h = (trusted: boolean, wait = 100, ahead = false): NodeAnswer => ({ kind: 'held', trusted, quarantine: 0, wait, ahead });
const e: NodeAnswer = { kind: 'error', trusted: false, quarantine: 0, wait: 0, ahead: false };

describe('countGrants', () => {
  test('trusted grants count; an untrusted one (lost its data) does not', () => {
    const c = countGrants([g(true), g(false), g(true)], 2);
    assert.deepEqual(c.counted, [0, 2]);
    assert.deepEqual(c.untrusted, [1]);
    assert.equal(c.bootstrap, false);
  });

  test('a reset node and a stale-but-trusted node cannot form a quorum while the node that knows the last fence is away', () => {
    // node 0 restarted empty, node 1 (the only one holding the last fence) unreachable, node 2 trusted
    const c = countGrants([g(false), e, g(true)], 2);
    assert.deepEqual(c.counted, [2]);
    assert.ok(c.counted.length < 2, 'no quorum');
  });

  test('bootstrap: a quorum answered and none was ever trusted (a new deployment)', () => {
    const c = countGrants([g(false), g(false), e], 2);
    assert.deepEqual(c.counted, [0, 1]);
    assert.equal(c.bootstrap, true);
  });

  test('no bootstrap when fewer than a quorum answered', () => {
    const c = countGrants([g(false), e, e], 2);
    assert.equal(c.bootstrap, false);
    assert.deepEqual(c.counted, []);
  });

  test('every node answered and no trustworthy node holds it: all grants count (the max covers all that is known)', () => {
    const c = countGrants([g(false), g(false), g(true)], 2);
    assert.deepEqual(c.counted, [0, 1, 2]);
    assert.equal(c.bootstrap, true, 'no majority kept its data: a new beginning, the nodes are marked trusted');
  });

  test('a trustworthy node holding the lock blocks the all-answered escape', () => {
    assert.deepEqual(countGrants([g(false), g(false), h(true)], 2).counted, []);
  });

  test('a quarantined grant never counts, trusted or not', () => {
    assert.deepEqual(countGrants([g(true, 500), g(true), g(true)], 2).counted, [1, 2]);
    assert.deepEqual(countGrants([g(false, 500), g(false), e], 2).counted, [1]);
  });

  test('single node: a reset node bootstraps again (a majority, the only node, lost its data)', () => {
    const c = countGrants([g(false)], 1);
    assert.deepEqual(c.counted, [0]);
    assert.equal(c.bootstrap, true);
  });
});

describe('shortfall: why a round without a quorum failed', () => {
  const verdict = (answers: NodeAnswer[], quorum: number) => shortfall(answers, countGrants(answers, quorum), quorum);

  test('held by another owner: busy, until enough holders expire', () => {
    assert.deepEqual(verdict([h(true, 300), h(true, 100), h(true, 200), g(true), g(true)], 3), {
      kind: 'busy',
      retryAfter: 100,
      busyNodes: 1,
      behind: false,
    });
  });

  test('a majority restarted empty and is quarantined: nobody holds it, so wait out the quarantine (not a quorum failure)', () => {
    assert.deepEqual(verdict([g(false, 7_000), g(false, 7_100), g(false, 6_900), g(true), g(true)], 3), {
      kind: 'quarantined',
      retryAfter: 6_900,
    });
  });

  test('held on some nodes while others are quarantined: busy, never a quorum failure', () => {
    const v = verdict([h(true, 5_000), g(false, 2_000), g(false, 2_000), g(true), e], 3);
    assert.equal(v.kind, 'busy');
    assert.equal(v.kind === 'busy' && v.retryAfter, 2_000, 'one more node must come back: the first quarantine to end');
  });

  test('node errors make the quorum unreachable whatever the wait: no-quorum, even with a holder', () => {
    assert.deepEqual(verdict([h(true, 100), g(true), e, e, e], 3), { kind: 'no-quorum' });
  });

  test('untrusted grants out of quarantine are no help by waiting', () => {
    assert.deepEqual(verdict([g(false), g(false), g(true), e, e], 3), { kind: 'no-quorum' });
  });

  test('unless their repair is under way: a short wait for it', () => {
    const repairing: NodeAnswer = { ...g(false), repair: 200 };
    assert.deepEqual(verdict([repairing, repairing, g(true), g(true), e], 3), { kind: 'quarantined', retryAfter: 200 });
  });

  test('waiters ahead on more than N - quorum nodes: behind', () => {
    const v = verdict([h(true, Infinity, true), h(true, Infinity, true), g(true)], 2);
    assert.equal(v.kind === 'busy' && v.behind, true);
  });
});
