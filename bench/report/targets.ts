// The targets of issue 26 judged from one run: fencelock/ioredis against the raw floor of the same run (and, on the
// design's table, against node-redlock v5). Generated, so one `npm run bench` redraws it with the numbers.
import type { CellResult, RunReport, WorkloadId } from '../types.js';
import { FLOOR, okCell, placeLabel, placesOf, REDLOCK_V5, SUBJECT, type Place } from './cells.js';
import { num } from './format.js';

interface Target {
  label: string;
  workload: WorkloadId;
  value(c: CellResult): number | null | undefined;
  /** what the figure is judged against: the floor's figure times a factor, another library's, or a fixed bound */
  against: { kind: 'floor'; factor: number } | { kind: 'library'; library: string; factor: number } | { kind: 'bound'; bound: number };
  higherIsBetter: boolean;
  /** a bound that must not be reached (`< 1 KiB`), not only not passed */
  strict?: true;
  unit: string;
}

const m = (key: string) => (c: CellResult) => c.metrics?.[key];
const redisCpu = (c: CellResult) => c.commands?.redisCpuPerOpUs;

const TARGETS: Target[] = [
  {
    label: 'W1 acquire+release p50 ≤ 1.3× the floor',
    workload: 'W1',
    value: m('pairP50Ms'),
    against: { kind: 'floor', factor: 1.3 },
    higherIsBetter: false,
    unit: 'ms',
  },
  {
    label: 'W2 pairs/s ≥ 0.9× the floor',
    workload: 'W2',
    value: m('pairsPerSec'),
    against: { kind: 'floor', factor: 0.9 },
    higherIsBetter: true,
    unit: '/s',
  },
  {
    label: 'W3 acquisitions/s ≥ the floor',
    workload: 'W3',
    value: m('acqPerSec'),
    against: { kind: 'floor', factor: 1 },
    higherIsBetter: true,
    unit: '/s',
  },
  {
    label: 'W3 wait p99 ≤ 50 ms',
    workload: 'W3',
    value: m('waitP99Ms'),
    against: { kind: 'bound', bound: 50 },
    higherIsBetter: false,
    unit: 'ms',
  },
  {
    label: 'W3 max/min per caller ≤ 1.5',
    workload: 'W3',
    value: m('fairnessMaxMin'),
    against: { kind: 'bound', bound: 1.5 },
    higherIsBetter: false,
    unit: '',
  },
  {
    label: 'W4 acquisitions/s ≥ the floor',
    workload: 'W4',
    value: m('acqPerSec'),
    against: { kind: 'floor', factor: 1 },
    higherIsBetter: true,
    unit: '/s',
  },
  {
    label: 'W4 wait p99 ≤ 50 ms',
    workload: 'W4',
    value: m('waitP99Ms'),
    against: { kind: 'bound', bound: 50 },
    higherIsBetter: false,
    unit: 'ms',
  },
  {
    label: 'W4 max/min per caller ≤ 1.5',
    workload: 'W4',
    value: m('fairnessMaxMin'),
    against: { kind: 'bound', bound: 1.5 },
    higherIsBetter: false,
    unit: '',
  },
  {
    label: "design table ops/s ≥ node-redlock v5's",
    workload: 'design',
    value: m('opsPerSec'),
    against: { kind: 'library', library: REDLOCK_V5, factor: 1 },
    higherIsBetter: true,
    unit: '/s',
  },
  {
    label: 'Redis CPU per acquire+release ≤ 1.5× the floor (W1)',
    workload: 'W1',
    value: redisCpu,
    against: { kind: 'floor', factor: 1.5 },
    higherIsBetter: false,
    unit: 'µs',
  },
  {
    label: 'Redis CPU per acquire+release ≤ 1.5× the floor (W2)',
    workload: 'W2',
    value: redisCpu,
    against: { kind: 'floor', factor: 1.5 },
    higherIsBetter: false,
    unit: 'µs',
  },
  {
    label: 'W5 heap per held lock < 1 KiB',
    workload: 'W5',
    value: m('heapBytesPerLock'),
    against: { kind: 'bound', bound: 1024 },
    higherIsBetter: false,
    strict: true,
    unit: 'B',
  },
];

/** The targets are Redis's: etcd and ZooKeeper cells are not judged. */
const redisPlace = (p: Place): boolean => p.mode !== 'etcd3' && p.mode !== 'zk3';

function judge(report: RunReport, t: Target, place: Place): string | undefined {
  const ran = report.cells.find(
    (c) => c.workload === t.workload && c.library === SUBJECT && c.mode === place.mode && c.clients === place.clients,
  );
  if (!ran || ran.status === 'n/a') return undefined; // not part of this run
  const mine = okCell(report, t.workload, SUBJECT, place);
  const v = mine ? t.value(mine) : undefined;
  let limit: number;
  let basis: string;
  let ratio = '';
  if (t.against.kind === 'bound') {
    limit = t.against.bound;
    basis = `${num(limit)}${t.unit ? ` ${t.unit}` : ''}`;
  } else {
    const other = t.against.kind === 'floor' ? FLOOR : t.against.library;
    const c = okCell(report, t.workload, other, place);
    const o = c ? t.value(c) : undefined;
    if (o === null || o === undefined || o === 0) return undefined; // nothing to judge against in this run
    limit = o * t.against.factor;
    basis = `${other} ${num(o)}`;
    if (v !== null && v !== undefined) ratio = ` (${(v / o).toFixed(2)}×)`;
  }
  if (v === null || v === undefined) return `| ${t.label} | ${placeLabel(place)} | ${mine ? '–' : 'failed'} | ${basis} | not measured |`;
  const met = t.higherIsBetter ? v >= limit : t.strict ? v < limit : v <= limit;
  return `| ${t.label} | ${placeLabel(place)} | ${num(v)}${ratio} | ${basis} | ${met ? 'yes' : '**no**'} |`;
}

/** Every target of issue 26, per Redis mode (and design client count) the run measured. */
export function targetsTable(report: RunReport): string {
  if (!report.cells.some((c) => c.library === SUBJECT && c.status === 'ok')) return '';
  const rows = TARGETS.flatMap((t) =>
    placesOf(report, t.workload)
      .filter(redisPlace)
      .map((p) => judge(report, t, p))
      .filter((r): r is string => r !== undefined),
  );
  if (rows.length === 0) return '';
  return [
    '### Targets (issue 26), judged from this run',
    '',
    `${SUBJECT} against the raw floor of the same run (ratio in brackets), node-redlock v5 on the design's table, fixed bounds elsewhere.`,
    '',
    `| target | mode | ${SUBJECT} | against | met? |`,
    '|---|---|--:|--:|---|',
    ...rows,
    ...repeatsNote(report),
  ].join('\n');
}

/** Every run of the repeated cells (bench/repeats.ts), so that the spread behind each median is on the page. */
function repeatsNote(report: RunReport): string[] {
  const repeated = report.cells.filter((c) => c.repeats && c.repeats.values.length > 1);
  if (repeated.length === 0) return [];
  const runs = Math.max(...repeated.map((c) => c.repeats?.values.length ?? 0));
  const lines = repeated.map((c) => {
    const values = (c.repeats?.values ?? []).map(num).join(', ');
    return `| ${c.workload} ${c.repeats?.metric} | ${placeLabel({ mode: c.mode, ...(c.clients === undefined ? {} : { clients: c.clients }) })} | ${c.library} | ${values} |`;
  });
  return [
    '',
    `The cells these targets compare ran ${runs} times each in this run, interleaved with the cells they are judged against ` +
      `(fencelock, floor, fencelock, floor, ...; the design's three libraries likewise), and every figure above is from the ` +
      'median run of its cell (bench/repeats.ts). Every run, in run order:',
    '',
    '| figure | mode | library | runs |',
    '|---|---|---|--:|',
    ...lines,
  ];
}
