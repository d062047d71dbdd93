// The ZooKeeper queue's names and rules, without a server: Curator's names for ours, one order for every
// name form (Curator's, ours, fencelock 0.1's), and who waits for whom.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blocker, isOurs, mutexQueue, nodePrefix, ordered, rwQueue, semaphoreQueue } from '../../src/zookeeper/queue.js';

const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';

test('our znode names are Curator’s protected names (a writer’s starts with write- for 0.1’s readers)', () => {
  assert.equal(nodePrefix(mutexQueue('/locks', 'order-1'), uuid), `/locks/order-1/_c_${uuid}-lock-`);
  assert.equal(nodePrefix(rwQueue('/locks', 'doc', 'read'), uuid), `/locks/rwlock:doc/_c_${uuid}-__READ__`);
  assert.equal(nodePrefix(rwQueue('/locks', 'doc', 'write'), uuid), `/locks/rwlock:doc/write-${uuid}-__WRIT__`);
  assert.equal(nodePrefix(semaphoreQueue('/locks', 's', 2), uuid), `/locks/semaphore:s/_c_${uuid}-permit-`);
  assert.ok(isOurs(`_c_${uuid}-lock-0000000007`, uuid));
  assert.ok(!isOurs('_c_11111111-2222-3333-4444-555555555555-lock-0000000007', uuid));
});

test('every child is ordered by its own sequence number, whatever its name form', () => {
  const names = [
    `_c_${uuid}-lock-0000000004`, // ours, and Curator's
    'lock-ffffffffffffffffffffffffffffffffffff-0000000002', // fencelock 0.1: Curator would order it by its token
    'lock-0000000003', // unprotected
    '_c_00000000-0000-0000-0000-000000000000-lock-0000000010',
    'not-a-queue-child',
  ];
  assert.deepEqual(
    ordered(names).map((c) => c.seq),
    [2, 3, 4, 10],
  );
});

test('a mutex or a writer waits for the child just before it; a reader for the first writer ahead of it', () => {
  const queue = ordered([
    '_c_a-__READ__0000000001',
    'write-0123456789abcdef0123456789abcdef0123-0000000002', // a 0.1 writer
    `write-${uuid}-__WRIT__0000000003`,
    '_c_b-__READ__0000000004',
  ]);
  const reader = rwQueue('/r', 'x', 'read');
  const writer = rwQueue('/r', 'x', 'write');
  assert.equal((blocker(reader, queue) as { seq: number }).seq, 2, 'the first writer ahead (0.1’s name counts)');
  assert.equal((blocker(writer, queue) as { seq: number }).seq, 4, 'the child just before');
  assert.equal(blocker(reader, queue.slice(0, 1)), null, 'readers share');
  assert.equal((blocker(mutexQueue('/r', 'x'), queue) as { seq: number }).seq, 4);
  assert.equal(blocker(semaphoreQueue('/r', 'x', 5), queue), null);
  assert.equal(blocker(semaphoreQueue('/r', 'x', 4), queue), 'any');
});
