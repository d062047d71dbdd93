// Mutual exclusion under contention, and the fence order it implies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LockManager } from '../../src/index.js';
import { CLIENT_KINDS, delay } from '../support/harness.js';
import { NODE_COUNTS, readyManager, lockValues, uniqueResource, withNodeSets } from './helpers.js';

const CONTENDERS = 16;
const ROUNDS = 25;
const MANAGERS = 4; // contenders spread over several managers, as over several processes

interface Window {
  readonly contender: number;
  readonly start: number;
  readonly end: number;
  readonly fence: bigint;
}

withNodeSets('mutual exclusion', NODE_COUNTS, (env, nodeCount) => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: ${CONTENDERS} contenders x ${ROUNDS} rounds of read-modify-write (withLock and acquire/release) never overlap`, async (t) => {
      const { admin } = env();
      const resource = uniqueResource(`mx-${kind}`);
      const counterKey = `test:counter:${resource}`;
      const store = admin[0]!;
      const managers: LockManager[] = [];
      for (let i = 0; i < MANAGERS; i++) {
        managers.push(await readyManager(env(), kind, { ttl: 2000, nodeTimeout: 100, acquireTimeout: 30_000 }));
      }

      const windows: Window[] = [];
      // The critical section: a read-modify-write with an await between read and write,
      // so that any overlap of two holders loses an increment.
      const increment = async (): Promise<void> => {
        const current = Number((await store.get(counterKey)) ?? '0');
        await delay(1);
        await store.set(counterKey, String(current + 1));
      };

      const contender = async (id: number): Promise<void> => {
        const locks = managers[id % MANAGERS]!;
        for (let round = 0; round < ROUNDS; round++) {
          if (id % 2 === 0) {
            await locks.withLock(resource, async (lock) => {
              const start = performance.now();
              assert.ok(lock.isValid(), 'lock valid inside the critical section');
              await increment();
              windows.push({ contender: id, start, end: performance.now(), fence: lock.fence });
            });
          } else {
            const lock = await locks.acquire(resource);
            const start = performance.now();
            try {
              assert.ok(lock.isValid(), 'lock valid inside the critical section');
              await increment();
            } finally {
              windows.push({ contender: id, start, end: performance.now(), fence: lock.fence });
              await lock.release();
            }
          }
        }
      };

      const began = performance.now();
      await Promise.all(Array.from({ length: CONTENDERS }, (_, id) => contender(id)));
      t.diagnostic(
        `${CONTENDERS * ROUNDS} critical sections on ${nodeCount} node(s) with ${kind} in ${Math.round(performance.now() - began)} ms`,
      );

      assert.equal(await store.get(counterKey), String(CONTENDERS * ROUNDS));
      assert.equal(windows.length, CONTENDERS * ROUNDS);

      const ordered = [...windows].sort((a, b) => a.start - b.start);
      for (let i = 1; i < ordered.length; i++) {
        const prev = ordered[i - 1]!;
        const cur = ordered[i]!;
        assert.ok(
          cur.start >= prev.end,
          `holder ${cur.contender} entered at ${cur.start.toFixed(3)} before holder ${prev.contender} left at ${prev.end.toFixed(3)}`,
        );
      }

      // Fences strictly increase across successive holders, in acquisition order.
      for (let i = 1; i < ordered.length; i++) {
        const prev = ordered[i - 1]!;
        const cur = ordered[i]!;
        assert.ok(cur.fence > prev.fence, `fence ${cur.fence} of holder #${i} is not above ${prev.fence} of holder #${i - 1}`);
      }
      assert.equal(new Set(windows.map((w) => w.fence)).size, windows.length);

      // Everything was released: no lock key is left on any node.
      assert.deepEqual(
        await lockValues(admin, resource),
        admin.map(() => null),
      );
    });
  }
});
