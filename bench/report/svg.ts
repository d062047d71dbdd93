// A hand-written SVG bar chart of contention (W3, W4) in both modes: acquisitions/s (linear) and wait p99 (log).
import { MODE_LABEL } from '../config.js';
import type { CellResult, Mode, RunReport, WorkloadId } from '../types.js';
import { num } from './format.js';

interface Panel {
  workload: WorkloadId;
  mode: Mode;
}
interface Metric {
  key: string;
  title: string;
  log: boolean;
}

const PANELS: Panel[] = [
  { workload: 'W3', mode: 'single' },
  { workload: 'W3', mode: 'redlock5' },
  { workload: 'W4', mode: 'single' },
  { workload: 'W4', mode: 'redlock5' },
];
const METRICS: Metric[] = [
  { key: 'acqPerSec', title: 'Acquisitions per second (higher is better)', log: false },
  { key: 'waitP99Ms', title: 'Wait p99 in ms, log scale (lower is better)', log: true },
];

const LABEL_W = 190;
const PANEL_W = 200;
const PANEL_GAP = 24;
const BAR_H = 15;
const BAR_GAP = 6;
const MARGIN = 16;
const VALUE_W = 52; // room kept right of the longest bar for its value

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const color = (lib: string): string => (lib.startsWith('fencelock') ? '#2563eb' : lib === 'raw-floor' ? '#9ca3af' : '#f59e0b');

/** Tick labels: 1, 10, 100, 1k, 10k, ... */
function tick(v: number): string {
  if (v >= 1_000_000) return `${v / 1_000_000}M`;
  if (v >= 1_000) return `${v / 1_000}k`;
  return String(Number(v.toPrecision(3)));
}

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`;
}

/** Maps a value to a bar length, with tick marks. */
interface Scale {
  len(v: number): number;
  ticks: number[];
}

function linearScale(maxValue: number, width: number): Scale {
  const raw = maxValue > 0 ? maxValue / 4 : 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) ?? 10 * mag;
  const top = Math.max(step, Math.ceil(maxValue / step) * step);
  const ticks = Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
  return { len: (v) => (Math.max(0, v) / top) * width, ticks };
}

function logScale(values: number[], width: number): Scale {
  const positive = values.filter((v) => v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...positive, 1)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...positive, 10)));
  const span = Math.log10(hi) - Math.log10(lo);
  const ticks: number[] = [];
  for (let t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t);
  return { len: (v) => (v <= lo ? 1 : ((Math.log10(v) - Math.log10(lo)) / span) * width), ticks };
}

export function contentionChart(report: RunReport): string {
  const libs = [...new Set(report.cells.map((c) => c.library))];
  const cell = (p: Panel, lib: string): CellResult | undefined =>
    report.cells.find((c) => c.workload === p.workload && c.mode === p.mode && c.library === lib);
  const inner = PANEL_W - VALUE_W;
  const blockH = 24 + 18 + libs.length * (BAR_H + BAR_GAP) + 22;
  const width = MARGIN * 2 + LABEL_W + PANELS.length * PANEL_W + (PANELS.length - 1) * PANEL_GAP;
  const height = MARGIN + 46 + METRICS.length * blockH + 24;
  const { W3: w3, W4: w4 } = report.settings.workloads;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    text(
      MARGIN,
      MARGIN + 14,
      `Contention on one key — ${report.date}, ${report.profile} profile`,
      'font-size="14" font-weight="600" fill="#111827"',
    ),
    text(
      MARGIN,
      MARGIN + 32,
      `W3: ${w3.callers} callers in one process; W4: ${w4.processes} processes × ${w4.callersPerProcess} callers. ` +
        `Each caller loops: acquire, hold ${w3.holdMs} ms, release, for ${w3.durationMs / 1000} s.`,
      'fill="#4b5563"',
    ),
  ];
  METRICS.forEach((metric, mi) => {
    const top = MARGIN + 46 + mi * blockH;
    const values = report.cells
      .filter((c) => c.status === 'ok' && (c.workload === 'W3' || c.workload === 'W4'))
      .map((c) => c.metrics?.[metric.key] ?? null)
      .filter((v): v is number => v !== null && Number.isFinite(v));
    const scale = metric.log ? logScale(values, inner) : linearScale(Math.max(0, ...values), inner);
    out.push(text(MARGIN, top + 14, metric.title, 'font-size="12" font-weight="600" fill="#374151"'));
    const barsTop = top + 42;
    libs.forEach((lib, li) => {
      const y = barsTop + li * (BAR_H + BAR_GAP);
      out.push(text(MARGIN + LABEL_W - 8, y + BAR_H - 4, lib, 'text-anchor="end" fill="#111827"'));
    });
    PANELS.forEach((p, pi) => {
      const x0 = MARGIN + LABEL_W + pi * (PANEL_W + PANEL_GAP);
      const barsH = libs.length * (BAR_H + BAR_GAP);
      out.push(text(x0, top + 32, `${p.workload} · ${MODE_LABEL[p.mode]}`, 'font-weight="600" fill="#374151"'));
      for (const t of scale.ticks) {
        const x = x0 + scale.len(t);
        out.push(`<line x1="${x.toFixed(1)}" y1="${barsTop - 3}" x2="${x.toFixed(1)}" y2="${barsTop + barsH}" stroke="#e5e7eb"/>`);
        out.push(text(x, barsTop + barsH + 12, tick(t), 'text-anchor="middle" fill="#6b7280" font-size="9"'));
      }
      libs.forEach((lib, li) => {
        const y = barsTop + li * (BAR_H + BAR_GAP);
        const c = cell(p, lib);
        const v = c?.metrics?.[metric.key];
        if (!c || c.status !== 'ok' || v === null || v === undefined) {
          const why = !c ? 'not run' : c.status === 'ok' ? 'no data' : c.status;
          out.push(text(x0 + 4, y + BAR_H - 4, why, `fill="${c?.status === 'failed' ? '#dc2626' : '#6b7280'}" font-style="italic"`));
          return;
        }
        const w = Math.max(1, scale.len(v));
        out.push(`<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H}" rx="2" fill="${color(lib)}"/>`);
        out.push(text(x0 + w + 4, y + BAR_H - 4, num(v), 'fill="#111827"'));
      });
    });
  });
  const legendY = height - 10;
  const legend: Array<[string, string]> = [
    ['#2563eb', 'fencelock'],
    ['#f59e0b', 'other libraries'],
    ['#9ca3af', 'raw floor (SET NX + compare-and-delete, 10 ms jittered retries)'],
  ];
  let lx = MARGIN;
  for (const [fill, label] of legend) {
    out.push(`<rect x="${lx}" y="${legendY - 9}" width="10" height="10" rx="2" fill="${fill}"/>`);
    out.push(text(lx + 14, legendY, label, 'fill="#374151"'));
    lx += 14 + label.length * 6 + 18;
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
