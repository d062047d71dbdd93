// The checks every contended fault run ends with, in one place.
import assert from 'node:assert/strict';
import { FencedStore } from './fenced-store.js';
import type { StoreWrite } from './history.js';
import type { WorkerPool } from './workers.js';

/** Waits for every worker to exit and asserts each exited 0 by itself; a failure shows their errors and output. */
export async function assertCleanExits(pool: WorkerPool, timeoutMs: number): Promise<void> {
  const exits = await pool.wait(timeoutMs);
  const why = pool.workers.map((w) => `${w.id}: ${w.errors.slice(0, 3).join('; ')}\n${w.output()}`).join('\n');
  assert.deepEqual(
    exits.map((e) => [e.code, e.signal]),
    exits.map(() => [0, null]),
    why,
  );
}

/** The protected store's write logs of `resources`, keyed by resource, for checkHistory. */
export async function storeLogs(storageUrl: string, prefix: string, resources: readonly string[]): Promise<Record<string, StoreWrite[]>> {
  const store = new FencedStore(storageUrl, prefix);
  try {
    return Object.fromEntries(await Promise.all(resources.map(async (r) => [r, await store.log(r)] as const)));
  } finally {
    store.close();
  }
}
