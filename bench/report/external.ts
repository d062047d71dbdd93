// The sections of the workloads that are scripts of their own (bench/external.ts, e.g. burst): their markdown as
// they wrote it, under their title.
import type { RunReport } from '../types.js';
import { firstLine } from './format.js';

export function externalSections(report: RunReport): string {
  return (report.external ?? [])
    .filter((e) => e.status !== 'ok' || e.markdown !== undefined) // the others wrote a page of their own
    .map((e) => {
      const body = e.status === 'ok' ? (e.markdown ?? '') : `${e.status === 'n/a' ? 'Not run' : '**Failed**'}: ${firstLine(e.error, 200)}`;
      return [`### ${e.title}`, '', `\`${e.command}\`${e.status === 'ok' ? `, ${Math.round(e.wallMs / 1000)} s` : ''}`, '', body].join(
        '\n',
      );
    })
    .join('\n\n');
}
