// The results as markdown: one table per workload, the setup, and the docs page around them.
import { WORKLOADS } from '../config.js';
import { WORKLOAD_ENTRIES } from '../workloads/index.js';
import type { CellResult, RunReport, WorkloadId } from '../types.js';
import { placeLabel } from './cells.js';
import { designTable } from './design.js';
import { externalSections } from './external.js';
import { firstLine, num } from './format.js';
import { ratiosTable } from './ratios.js';
import { targetsTable } from './targets.js';

export const BEGIN = '<!-- bench:begin -->';
export const END = '<!-- bench:end -->';

interface Column {
  head: string;
  cell(c: CellResult): string;
}

const m =
  (key: string) =>
  (c: CellResult): string =>
    num(c.metrics?.[key]);
const cmdsPerOp: Column = { head: 'Redis cmds/op', cell: (c) => num(c.commands?.perOp) };
const cpuPerOp: Column = { head: 'client CPU µs/op', cell: (c) => num(c.cpu?.perOpUs) };
const redisCpuPerOp: Column = { head: 'Redis CPU µs/op', cell: (c) => num(c.commands?.redisCpuPerOpUs) };
const errors: Column = { head: 'errors', cell: (c) => String(c.errors ?? 0) };

function breakdown(c: CellResult): string {
  const ops = c.ops ?? 0;
  if (!c.commands || ops === 0) return '–';
  return Object.entries(c.commands.byCommand)
    .sort((a, b) => b[1] - a[1])
    .map(([cmd, calls]) => `${cmd} ${num(calls / ops)}`)
    .join(', ');
}

const contention: Column[] = [
  { head: 'acq/s', cell: m('acqPerSec') },
  { head: 'wait p50 ms', cell: m('waitP50Ms') },
  { head: 'wait p99 ms', cell: m('waitP99Ms') },
  { head: 'handoff gap p50 ms', cell: m('gapP50Ms') },
  { head: 'max/min per caller', cell: (c) => (c.fairness && c.fairness.maxMinRatio === null ? '∞' : num(c.metrics?.fairnessMaxMin)) },
  { head: 'Jain', cell: m('jain') },
  errors,
  cmdsPerOp,
  cpuPerOp,
  redisCpuPerOp,
];

const COLUMNS: Record<WorkloadId, Column[]> = {
  W1: [
    { head: 'acquire+release p50 ms (warm)', cell: m('pairP50Ms') },
    { head: 'p99 ms', cell: m('pairP99Ms') },
    { head: 'first pair ms (cold)', cell: m('firstPairMs') },
    { head: 'first 100 mean ms', cell: m('first100MeanMs') },
    { head: 'acquire p50 ms', cell: m('acquireP50Ms') },
    { head: 'release p50 ms', cell: m('releaseP50Ms') },
    cmdsPerOp,
    { head: 'commands per op', cell: breakdown },
    cpuPerOp,
    redisCpuPerOp,
  ],
  W2: [
    { head: 'pairs/s', cell: m('pairsPerSec') },
    { head: 'pair p50 ms', cell: m('pairP50Ms') },
    { head: 'pair p99 ms', cell: m('pairP99Ms') },
    errors,
    cmdsPerOp,
    cpuPerOp,
    redisCpuPerOp,
  ],
  W3: contention,
  W4: contention,
  W5: [
    { head: 'heap bytes/lock', cell: m('heapBytesPerLock') },
    { head: 'event-loop delay p99 ms', cell: m('eventLoopDelayP99Ms') },
    { head: 'cmds/lock during the hold', cell: m('holdCommandsPerLock') },
    { head: 'locks held', cell: m('locksHeld') },
    errors,
    { head: 'Redis cmds/lock', cell: (c) => num(c.commands?.perOp) },
    { head: 'client CPU µs/lock', cell: (c) => num(c.cpu?.perOpUs) },
  ],
  design: [
    { head: 'ops/s', cell: m('opsPerSec') },
    { head: 'mean ms', cell: m('meanMs') },
    { head: 'p50 ms', cell: m('p50Ms') },
    { head: 'p99 ms', cell: m('p99Ms') },
    errors,
    cmdsPerOp,
    cpuPerOp,
    redisCpuPerOp,
  ],
};

export function workloadTable(report: RunReport, workload: WorkloadId): string {
  // A Redis-only library has no etcd or ZooKeeper row worth a line: the note above the tables says so once.
  const cells = report.cells.filter((c) => c.workload === workload && !(c.status === 'n/a' && (c.mode === 'etcd3' || c.mode === 'zk3')));
  if (cells.length === 0) return '';
  const cols = COLUMNS[workload];
  const head = `| library | mode | ${cols.map((c) => c.head).join(' | ')} |`;
  const rule = `|---|---|${cols.map(() => '--:').join('|')}|`;
  const rows = cells.map((c) => {
    const mode = placeLabel(c);
    if (c.status !== 'ok') {
      const why = c.status === 'n/a' ? `n/a: ${c.error ?? 'no auto-extension'}` : `**failed**: ${firstLine(c.error).replace(/\|/g, '\\|')}`;
      return `| ${c.library} | ${mode} | ${why} |${cols
        .slice(1)
        .map(() => ' |')
        .join('')}`;
    }
    return `| ${c.library} | ${mode} | ${cols.map((col) => col.cell(c)).join(' | ')} |`;
  });
  return [`### ${WORKLOAD_ENTRIES[workload].title}`, '', head, rule, ...rows].join('\n');
}

function settingsTable(report: RunReport): string {
  const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
  const rows = Object.entries(report.settings.libraries).map(
    ([lib, s]) =>
      `| ${lib} | ${Object.entries(s)
        .map(([k, v]) => `${k}: ${show(v)}`)
        .join('<br>')
        .replace(/\|/g, '\\|')} |`,
  );
  return ['| library | settings |', '|---|---|', ...rows].join('\n');
}

/** The generated part of the page, between the markers. `chart` is the SVG's path relative to the page. */
export function generatedSection(report: RunReport, chart: string): string {
  const mc = report.machine;
  const versions = Object.entries(report.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const w = report.settings.workloads;
  return [
    `Run of ${report.date} (${report.profile} profile, ${Math.round(report.totalMs / 1000)} s in total).`,
    '',
    `- Machine: ${mc.cpus} × ${mc.cpuModel}, ${mc.memoryGiB} GiB, ${mc.platform} (${mc.arch}); shared, so expect noise of ±10–20%.`,
    `- Node ${mc.node}, Redis ${mc.redis}; fencelock at commit ${report.fencelockCommit}.`,
    `- Versions: ${versions}.`,
    `- Command: \`${report.command}\``,
    `- Common settings: \`${JSON.stringify(report.settings.common)}\``,
    `- Workloads: \`${JSON.stringify(w)}\``,
    '',
    `![acquisitions/s and wait p99 under contention, W3 and W4, both modes](${chart})`,
    '',
    ...[
      targetsTable(report),
      ratiosTable(report),
      designTable(report),
      ...WORKLOADS.map((id) => workloadTable(report, id)),
      externalSections(report),
    ].flatMap((t) => (t ? [t, ''] : [])),
    '<details><summary>Library settings</summary>',
    '',
    settingsTable(report),
    '',
    '</details>',
  ].join('\n');
}

/** What bench/run.ts prints at the end: the targets, the ratios, the design's table, then every workload's table. */
export function consoleSummary(report: RunReport): string {
  return [targetsTable(report), ratiosTable(report), designTable(report), ...WORKLOADS.map((id) => workloadTable(report, id))]
    .filter(Boolean)
    .join('\n\n');
}
