// Writes a run's outputs: the JSON, the docs page and the chart. Default places: bench/results/ and docs/;
// with --out everything goes to that directory instead.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunReport } from '../types.js';
import { generatedSection } from './markdown.js';
import { renderPage } from './page.js';
import { contentionChart } from './svg.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface Written {
  json: string;
  page: string;
  chart: string;
}

/** `json: false` (bench/render.ts): only the page and the chart, from a report that is already on disk. */
export async function writeOutputs(report: RunReport, outDir: string | undefined, { json = true } = {}): Promise<Written> {
  const resultsDir = outDir ?? path.join(ROOT, 'bench', 'results');
  const docsDir = outDir ?? path.join(ROOT, 'docs');
  const files: Written = {
    json: path.join(resultsDir, `${report.date}.json`),
    page: path.join(docsDir, 'benchmarks.md'),
    chart: path.join(docsDir, 'benchmarks.svg'),
  };
  await mkdir(resultsDir, { recursive: true });
  await mkdir(docsDir, { recursive: true });
  if (json) await writeFile(files.json, JSON.stringify(report, null, 2) + '\n');
  await writeFile(files.chart, contentionChart(report));
  const existing = await readFile(files.page, 'utf8').catch(() => undefined);
  await writeFile(files.page, renderPage(existing, generatedSection(report, 'benchmarks.svg')));
  return files;
}
