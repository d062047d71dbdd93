// What every backend's runner does once the nemesis is done: wait for the workers to end by themselves, note
// those that did not, and put the whole history, with the fenced store's log, through the checker.
import { checkHistory, storeLogs, type WorkerPool } from '../support/faults/index.js';

export interface Verdict {
  /** the client operations the workers attempted (held, lost, timed out, a tryAcquire miss, failed) */
  readonly operations: number;
  readonly violations: readonly string[];
  /** each worker's counts, for --verbose */
  readonly summary: string;
}

/** `warnings` gets the workers that did not exit cleanly (with their last line) and the errors they reported. */
export async function judge(
  pool: WorkerPool,
  waitMs: number,
  store: { readonly url: string; readonly prefix: string; readonly resources: readonly string[] },
  warnings: string[],
): Promise<Verdict> {
  const exits = await pool.wait(waitMs);
  for (const e of exits) {
    if (e.code === 0 && e.signal === null) continue;
    // Its last line says why (the leak watchdog names the handles); FENCELOCK_LEAK_DEBUG adds where its timers were made.
    const output =
      pool.workers
        .find((w) => w.id === e.id)
        ?.output()
        .trim() ?? '';
    const tail = process.env.FENCELOCK_LEAK_DEBUG ? output.slice(-3_000) : (output.split('\n').at(-1) ?? '');
    warnings.push(`worker ${e.id} exited ${e.signal ?? e.code}: ${tail}`);
  }
  for (const w of pool.workers) if (w.errors.length > 0) warnings.push(`${w.id}: ${w.errors.length} errors, first: ${w.errors[0]}`);

  const logs = await storeLogs(store.url, store.prefix, store.resources);
  const { violations } = checkHistory(pool.records(), logs);
  const operations = pool.workers.reduce((sum, w) => {
    const st = w.stats;
    return sum + (st ? st.holds + st.lost + st.timeouts + st.misses + st.errors : w.records.length);
  }, 0);
  const summary = pool.workers
    .map(
      (w) =>
        `${w.id}: ${
          w.stats
            ? Object.entries(w.stats)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')
            : 'no stats'
        }`,
    )
    .join('; ');
  return { operations, violations, summary };
}
