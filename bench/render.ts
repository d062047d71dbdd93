// Re-renders the docs page and the chart from a results JSON, without running anything:
//   node --import tsx bench/render.ts bench/results/<date>.json [--out <dir>]
import { readFile } from 'node:fs/promises';
import { writeOutputs } from './report/write.js';
import type { RunReport } from './types.js';

const [file, flag, dir] = process.argv.slice(2);
if (!file || (flag !== undefined && (flag !== '--out' || !dir))) {
  console.error('usage: node --import tsx bench/render.ts <results.json> [--out <dir>]');
  process.exit(2);
}
const report = JSON.parse(await readFile(file, 'utf8')) as RunReport;
const written = await writeOutputs(report, dir, { json: false });
console.log(`Wrote ${written.page} and ${written.chart}`);
