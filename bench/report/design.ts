// The design's throughput table from one run: ops/s and mean latency per client count for fencelock, node-redlock
// v5 and the raw floor, beside the design's own figures and with a note on how this machine differs.
import { DESIGN_FIGURES, DESIGN_LIBRARIES } from '../config.js';
import type { RunReport } from '../types.js';
import { FLOOR, okCell, REDLOCK_V5, SUBJECT } from './cells.js';
import { num } from './format.js';

export function designTable(report: RunReport): string {
  const cells = report.cells.filter((c) => c.workload === 'design');
  if (cells.length === 0) return '';
  const libs = DESIGN_LIBRARIES.filter((l) => cells.some((c) => c.library === l));
  const counts = [...new Set(cells.map((c) => c.clients ?? 0))].sort((a, b) => a - b);
  const figure = (library: string, clients: number, key: string): number | null | undefined =>
    okCell(report, 'design', library, { mode: 'redlock3', clients })?.metrics?.[key];
  const ratio = (clients: number, other: string): string => {
    const mine = figure(SUBJECT, clients, 'opsPerSec');
    const theirs = figure(other, clients, 'opsPerSec');
    return mine != null && theirs ? `${(mine / theirs).toFixed(2)}×` : '–';
  };
  const compared = [REDLOCK_V5, FLOOR].filter((l) => libs.includes(l) && libs.includes(SUBJECT));
  const head = [
    'clients',
    ...libs.flatMap((l) => [`${l} ops/s`, 'mean ms']),
    ...compared.map((l) => `${SUBJECT} ÷ ${l}`),
    "the design's figure",
  ];
  const rows = counts.map((n) => {
    const own = DESIGN_FIGURES.find((f) => f.clients === n);
    return [
      String(n),
      ...libs.flatMap((l) => {
        const c = okCell(report, 'design', l, { mode: 'redlock3', clients: n });
        if (!c) return [cells.some((x) => x.library === l && x.clients === n) ? 'failed' : '–', '–'];
        return [num(c.metrics?.opsPerSec), num(c.metrics?.meanMs)];
      }),
      ...compared.map((l) => ratio(n, l)),
      own ? `${own.opsPerSec.toLocaleString('en-US')} ops/s at ${own.meanMs} ms` : '–',
    ];
  });
  const durationS = (report.settings.workloads.design?.durationMs ?? 0) / 1000;
  const warmup = report.settings.workloads.warmupPairs ?? 200;
  const processes =
    report.profile === 'full'
      ? 'each (client count, library) in a fresh process'
      : 'a --quick run: tiny counts, the cells sharing one process, so not a measurement';
  const { cpus } = report.machine;
  return [
    "### The design's table, beside the design's own figures",
    '',
    `3 Redis nodes (Redlock, quorum 2); N clients at once in one process, each acquiring and releasing a key of its ` +
      `own in a loop for ${num(durationS)} s after ${warmup} warm-up pairs (${processes}). An op is one acquire + ` +
      `release pair, and its latency the pair's. ${REDLOCK_V5} is node-redlock v5 (\`redlock@5.0.0-beta.2\`).`,
    '',
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '--:').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    "How this machine differs from the design's: the design's figures are from a 3-node cluster of 4-vCPU " +
      `machines, one node per machine, with the clients elsewhere on the network. Here the 3 nodes and every client ` +
      `share ${cpus} cores of one machine and talk over loopback: servers and clients take CPU from each other, ` +
      "and more clients load the nodes' cores as well, while a round trip costs no network time. The absolute " +
      'figures do not compare; read the three libraries against each other, in this run.',
  ].join('\n');
}
