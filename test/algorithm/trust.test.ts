// Which grants count toward a quorum: pure decisions, no Redis.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countGrants, type NodeAnswer } from '../../src/algorithm/trust.js';

const g = (nodeTrusted: boolean, resourcesTrusted = false, quarantined = false): NodeAnswer => ({
  kind: 'granted',
  nodeTrusted,
  resourcesTrusted,
  quarantined,
});
const h = (nodeTrusted: boolean, resourcesTrusted = false): NodeAnswer => ({
  kind: 'held',
  nodeTrusted,
  resourcesTrusted,
  quarantined: false,
});
const e: NodeAnswer = { kind: 'error', nodeTrusted: false, resourcesTrusted: false, quarantined: false };

describe('countGrants', () => {
  test('trusted grants count; an untrusted one (lost its data) does not', () => {
    const c = countGrants([g(true), g(false), g(true)], 2);
    assert.deepEqual(c.counted, [0, 2]);
    assert.deepEqual(c.untrusted, [1]);
    assert.equal(c.bootstrap, false);
  });

  test('a repaired counter makes an untrusted node count for that resource', () => {
    assert.deepEqual(countGrants([g(false, true), g(true), e], 2).counted, [0, 1]);
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
    assert.equal(c.bootstrap, false);
  });

  test('a trustworthy node holding the lock blocks the all-answered escape', () => {
    assert.deepEqual(countGrants([g(false), g(false), h(true)], 2).counted, []);
  });

  test('a quarantined grant never counts, trusted or not', () => {
    assert.deepEqual(countGrants([g(true, false, true), g(true), g(true)], 2).counted, [1, 2]);
    assert.deepEqual(countGrants([g(false, false, true), g(false), e], 2).counted, [1]);
  });

  test('single node: a reset node bootstraps again (a majority, the only node, lost its data)', () => {
    const c = countGrants([g(false)], 1);
    assert.deepEqual(c.counted, [0]);
    assert.equal(c.bootstrap, true);
  });
});
