// A recorder of scripts/test-reporter.mjs (run-tests.mjs's reporter): keeps the whole output of every test file that fails (each
// test's result, its error with stack and cause, diagnostics, and what the file printed to stdout and stderr)
// in .tmp/test-failures/<file>.<run>.log, so that a failure seen once, in a run beside others, is not lost
// with the terminal. Written as each file finishes (--test-force-exit ends the runner before a reporter's
// last words); a file that passes leaves nothing.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { sourcePath } from './test-paths.mjs';

export const FAILURES_DIR = '.tmp/test-failures';

/** One event as a line or a few: what the spec reporter would show, plus the error in full. */
function describe(event) {
  const { name, nesting = 0, details, message } = event.data;
  const indent = '  '.repeat(nesting);
  switch (event.type) {
    case 'test:pass':
      return `${indent}ok ${name} (${Math.round(details?.duration_ms ?? 0)} ms)${details?.skip ? ` # SKIP ${details.skip}` : ''}`;
    case 'test:fail': {
      const error = inspect(details?.error, { depth: 6, breakLength: 120 }).replace(/^/gm, `${indent}    `);
      return `${indent}not ok ${name} (${Math.round(details?.duration_ms ?? 0)} ms)\n${error}`;
    }
    case 'test:diagnostic':
      return `${indent}# ${message}`;
    case 'test:stdout':
    case 'test:stderr':
      return `[${event.type.slice(5)}] ${String(message).replace(/\n$/, '')}`;
    default:
      return undefined;
  }
}

/** The recorder: called with every event of the run (scripts/test-reporter.mjs feeds it). */
export function keepFailures() {
  // Per file: its lines so far, and once it failed, where they go. A file's results can be reported after
  // its own completion event (the runner reports in order, files finish in any order): a failed file's log
  // is written again with every line that comes later.
  const byFile = new Map();
  const passed = new Set();
  return (event) => {
    const file = event.data?.file;
    if (!file || passed.has(file)) return;
    const entry = byFile.get(file) ?? { lines: [], out: undefined, header: '' };
    byFile.set(file, entry);
    const { name, nesting, details } = event.data;
    // the file itself: the runner reports each file's process as a test named by the file's path
    const fileItself = nesting === 0 && name === file && (event.type === 'test:complete' || event.type === 'test:fail');
    if (fileItself && details?.passed !== false && event.type === 'test:complete') {
      byFile.delete(file);
      passed.add(file);
      return;
    }
    if (fileItself && entry.out === undefined) {
      const relative = sourcePath(file);
      // run-tests.mjs names its run, so that it lists only its own files (concurrent runs share the folder).
      const stamp = process.env.FENCELOCK_TEST_RUN ?? new Date().toISOString().replace(/[:.]/g, '-');
      mkdirSync(FAILURES_DIR, { recursive: true });
      entry.out = path.join(FAILURES_DIR, `${relative.replace(/[\\/]/g, '__')}.${stamp}.log`);
      const header = `${relative} failed (${Math.round(details?.duration_ms ?? 0)} ms), finished ${new Date().toISOString()}`;
      entry.header = `${header}\n${inspect(details?.error, { depth: 6 })}\n`;
    } else if (!fileItself) {
      const line = describe(event);
      if (line === undefined) return;
      entry.lines.push(line);
    }
    if (entry.out !== undefined) writeFileSync(entry.out, `${entry.header}\n${entry.lines.join('\n')}\n`);
  };
}
