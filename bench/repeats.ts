// The cells the targets judge run several times in one run, interleaved with the cells they are judged
// against (fencelock, floor, fencelock, floor, ...), and the report gives each one's median run. On a shared
// 2-core machine one cell swings by a fifth from one run to the next, and a neighbour's load can slow a whole
// minute: a single run of each, minutes apart, would judge the machine as much as the library.
import { DESIGN_LIBRARIES } from './config.js';
import { FLOOR, SUBJECT } from './report/cells.js';
import type { CellId, CellResult, WorkloadId } from './types.js';

/** The libraries whose W1-W4 cells the targets compare (report/targets.ts): fencelock/ioredis and the floor. */
const JUDGED = [SUBJECT, FLOOR];

/** The figure a repeated cell is ranked by: what its target judges. */
const HEADLINE: Partial<Record<WorkloadId, string>> = {
  W1: 'pairP50Ms',
  W2: 'pairsPerSec',
  W3: 'acqPerSec',
  W4: 'acqPerSec',
  design: 'opsPerSec',
};

/** Whether a target judges this cell: it then runs `repeats` times. */
export function isRepeated(c: CellId): boolean {
  if (c.workload === 'design') return DESIGN_LIBRARIES.includes(c.library);
  return HEADLINE[c.workload] !== undefined && JUDGED.includes(c.library) && (c.mode === 'single' || c.mode === 'redlock5');
}

/**
 * The run order of `cells` (indexes), each repeated cell `repeats` times: per place (workload, mode, client
 * count), its repeated cells round after round (A B A B A B), then the rest of that place's cells once.
 */
export function runOrder(cells: readonly CellId[], indexes: readonly number[], repeats: number): number[] {
  const order: number[] = [];
  const place = (c: CellId): string => `${c.workload} ${c.mode} ${c.clients ?? ''}`;
  const places = [...new Set(indexes.map((i) => place(cells[i] as CellId)))];
  for (const p of places) {
    const here = indexes.filter((i) => place(cells[i] as CellId) === p);
    const judged = here.filter((i) => isRepeated(cells[i] as CellId));
    for (let round = 0; round < repeats; round++) order.push(...judged);
    order.push(...here.filter((i) => !isRepeated(cells[i] as CellId)));
  }
  return order;
}

/** The run a cell's report shows: of several, the median by its headline figure (failed runs last), with every run's figure. */
export function medianRun(runs: readonly CellResult[]): CellResult {
  const only = runs[0] as CellResult;
  const metric = HEADLINE[only.workload];
  if (runs.length === 1 || metric === undefined) return only;
  const value = (r: CellResult): number | null => (r.status === 'ok' ? (r.metrics?.[metric] ?? null) : null);
  const ok = runs.filter((r) => value(r) !== null).sort((a, b) => (value(a) as number) - (value(b) as number));
  const chosen = ok.length > 0 ? (ok[Math.floor((ok.length - 1) / 2)] as CellResult) : only;
  return { ...chosen, repeats: { metric, values: runs.map(value) } };
}
