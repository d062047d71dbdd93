// Finding cells in a report: by workload, library and place (a mode; for the design table also a client count).
import { MODE_LABEL } from '../config.js';
import type { CellResult, Mode, RunReport, WorkloadId } from '../types.js';

/** Where a cell ran: its mode, and for the design table its client count. */
export interface Place {
  mode: Mode;
  clients?: number;
}

export const FLOOR = 'raw-floor';
/** the library the targets judge (targets.ts, the design table, the repeated cells of bench/repeats.ts) */
export const SUBJECT = 'fencelock/ioredis';
/** fencelock's rows in the ratio tables, in this order, those the run has */
export const FENCELOCK = ['fencelock/ioredis', 'fencelock/node-redis', 'fencelock/ioredis@previous'] as const;
/** node-redlock v5, the design table's other library */
export const REDLOCK_V5 = 'redlock@5-beta';

export function placeLabel(p: Place): string {
  return p.clients === undefined ? MODE_LABEL[p.mode] : `${MODE_LABEL[p.mode]}, ${p.clients} clients`;
}

/** The places a workload ran in, in the order of the report. */
export function placesOf(report: RunReport, workload: WorkloadId): Place[] {
  const seen = new Map<string, Place>();
  for (const c of report.cells) {
    if (c.workload !== workload) continue;
    const key = `${c.mode} ${c.clients ?? ''}`;
    if (!seen.has(key)) seen.set(key, { mode: c.mode, ...(c.clients === undefined ? {} : { clients: c.clients }) });
  }
  return [...seen.values()];
}

/** The cell that measured (ok) `library` in `workload` at `place`. */
export function okCell(report: RunReport, workload: WorkloadId, library: string, place: Place): CellResult | undefined {
  return report.cells.find(
    (c) => c.workload === workload && c.library === library && c.mode === place.mode && c.clients === place.clients && c.status === 'ok',
  );
}
