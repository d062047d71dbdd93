// fencelock against the raw floor (and its previous release), cell by cell, from one run: every figure beside the
// floor's of the same run and its ratio to it (docs/benchmarks.md, "fencelock against the floor").
import type { CellResult, RunReport, WorkloadId } from '../types.js';
import { FENCELOCK, FLOOR, okCell, placeLabel, placesOf } from './cells.js';
import { num } from './format.js';

interface Row {
  /** what is compared */
  label: string;
  workload: WorkloadId;
  /** the figure of a cell */
  value(c: CellResult): number | null | undefined;
}

const metric = (key: string) => (c: CellResult) => c.metrics?.[key];
const redisCpu = (c: CellResult) => c.commands?.redisCpuPerOpUs;
const ROWS: Row[] = [
  { label: 'W1 first acquire+release of the process (cold), ms', workload: 'W1', value: metric('firstPairMs') },
  { label: 'W1 first 100 pairs of the process, mean ms (cold)', workload: 'W1', value: metric('first100MeanMs') },
  { label: 'W1 acquire+release p50 ms (warm)', workload: 'W1', value: metric('pairP50Ms') },
  { label: 'W1 acquire p50 ms', workload: 'W1', value: metric('acquireP50Ms') },
  { label: 'W1 release p50 ms', workload: 'W1', value: metric('releaseP50Ms') },
  { label: 'W2 pairs/s', workload: 'W2', value: metric('pairsPerSec') },
  { label: 'W3 acquisitions/s', workload: 'W3', value: metric('acqPerSec') },
  { label: 'W3 wait p99 ms', workload: 'W3', value: metric('waitP99Ms') },
  { label: 'W3 max/min per caller', workload: 'W3', value: metric('fairnessMaxMin') },
  { label: 'W4 acquisitions/s', workload: 'W4', value: metric('acqPerSec') },
  { label: 'W4 wait p99 ms', workload: 'W4', value: metric('waitP99Ms') },
  { label: 'W4 max/min per caller', workload: 'W4', value: metric('fairnessMaxMin') },
  ...(['W1', 'W2', 'W3', 'W4'] as const).map((w): Row => ({ label: `${w} Redis CPU µs per op`, workload: w, value: redisCpu })),
  { label: 'design ops/s', workload: 'design', value: metric('opsPerSec') },
  { label: 'design mean latency ms', workload: 'design', value: metric('meanMs') },
  { label: 'W5 heap bytes per held lock', workload: 'W5', value: metric('heapBytesPerLock') },
];

/** `value (ratio×)`: the library's figure and its ratio to the floor's, in the same run. */
function versus(row: Row, c: CellResult | undefined, floor: CellResult | undefined): string {
  const v = c ? row.value(c) : undefined;
  const f = floor ? row.value(floor) : undefined;
  if (v === null || v === undefined) return '–';
  if (f === null || f === undefined || f === 0) return num(v);
  return `${num(v)} (${(v / f).toFixed(2)}×)`;
}

/** One table: per figure and place, the floor's figure and each fencelock's with its ratio to it. */
export function ratiosTable(report: RunReport): string {
  const libraries = FENCELOCK.filter((l) => report.cells.some((c) => c.library === l));
  if (!report.cells.some((c) => c.library === FLOOR) || libraries.length === 0) return '';
  const head = `| figure | mode | ${FLOOR} | ${libraries.join(' | ')} |`;
  const rule = `|---|---|--:|${libraries.map(() => '--:').join('|')}|`;
  const rows: string[] = [];
  for (const row of ROWS)
    for (const place of placesOf(report, row.workload)) {
      const floor = okCell(report, row.workload, FLOOR, place);
      const cols = libraries.map((l) => versus(row, okCell(report, row.workload, l, place), floor));
      if (!floor && cols.every((c) => c === '–')) continue;
      const f = floor ? row.value(floor) : undefined;
      rows.push(`| ${row.label} | ${placeLabel(place)} | ${floor ? num(f) : 'n/a'} | ${cols.join(' | ')} |`);
    }
  return [
    '### fencelock against the floor',
    '',
    'Each fencelock figure beside the raw floor of the same run, with its ratio to it. Cold: the first pairs of a ' +
      'fresh process (the warm-up, before any timed pair), which a CLI, a cron job or a short-lived worker pays; warm: ' +
      'the timed pairs after them. The floor has no auto-extension: W5 has no floor figure.',
    '',
    head,
    rule,
    ...rows,
  ].join('\n');
}
