// fencelock against the raw floor (and its previous release), cell by cell, from one run: the figures the
// performance targets are judged by (docs/benchmarks.md, "fencelock against the floor").
import { MODE_LABEL, MODES } from '../config.js';
import type { CellResult, Mode, RunReport, WorkloadId } from '../types.js';
import { num } from './format.js';

const FENCELOCK = ['fencelock/ioredis', 'fencelock/node-redis', 'fencelock/ioredis@previous'] as const;
const FLOOR = 'raw-floor';

interface Row {
  /** what is compared */
  label: string;
  workload: WorkloadId;
  /** the figure of a cell */
  value(c: CellResult): number | null | undefined;
  /** higher is better (throughput) or lower is better (latency, CPU) */
  higherIsBetter: boolean;
}

const metric = (key: string) => (c: CellResult) => c.metrics?.[key];
const ROWS: Row[] = [
  { label: 'W1 acquire p50', workload: 'W1', value: metric('acquireP50Ms'), higherIsBetter: false },
  { label: 'W1 release p50', workload: 'W1', value: metric('releaseP50Ms'), higherIsBetter: false },
  { label: 'W1 acquire+release p50', workload: 'W1', value: metric('pairP50Ms'), higherIsBetter: false },
  { label: 'W2 pairs/s', workload: 'W2', value: metric('pairsPerSec'), higherIsBetter: true },
  { label: 'W3 acquisitions/s', workload: 'W3', value: metric('acqPerSec'), higherIsBetter: true },
  { label: 'W4 acquisitions/s', workload: 'W4', value: metric('acqPerSec'), higherIsBetter: true },
  ...(['W1', 'W2', 'W3', 'W4'] as const).map((w): Row => ({
    label: `${w} Redis CPU per op`,
    workload: w,
    value: (c) => c.commands?.redisCpuPerOpUs,
    higherIsBetter: false,
  })),
];

function cell(report: RunReport, workload: WorkloadId, library: string, mode: Mode): CellResult | undefined {
  return report.cells.find((c) => c.workload === workload && c.library === library && c.mode === mode && c.status === 'ok');
}

/** `value (ratio×)`: the library's figure and its ratio to the floor's, in the same run. */
function versus(row: Row, c: CellResult | undefined, floor: CellResult | undefined): string {
  const v = c ? row.value(c) : undefined;
  const f = floor ? row.value(floor) : undefined;
  if (v === null || v === undefined) return '–';
  if (f === null || f === undefined || f === 0) return num(v);
  return `${num(v)} (${(v / f).toFixed(2)}×)`;
}

/** One table: per target row and mode, the floor's figure and each fencelock's with its ratio to it. */
export function ratiosTable(report: RunReport): string {
  const libraries = FENCELOCK.filter((l) => report.cells.some((c) => c.library === l));
  if (!report.cells.some((c) => c.library === FLOOR) || libraries.length === 0) return '';
  const head = `| figure | mode | ${FLOOR} | ${libraries.join(' | ')} |`;
  const rule = `|---|---|--:|${libraries.map(() => '--:').join('|')}|`;
  const rows: string[] = [];
  for (const row of ROWS)
    for (const mode of MODES) {
      const floor = cell(report, row.workload, FLOOR, mode);
      if (!floor) continue;
      const f = row.value(floor);
      const cols = libraries.map((l) => versus(row, cell(report, row.workload, l, mode), floor));
      rows.push(`| ${row.label} | ${MODE_LABEL[mode]} | ${num(f)} | ${cols.join(' | ')} |`);
    }
  return [
    '### fencelock against the floor',
    '',
    'Each fencelock figure with its ratio to the raw floor of the same run (ms, acquisitions or pairs per second, Redis µs).',
    '',
    head,
    rule,
    ...rows,
  ].join('\n');
}
