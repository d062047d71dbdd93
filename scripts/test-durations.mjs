// A test reporter for scripts/run-tests.mjs: records each test file's wall time (its process, start to end, as the
// runner saw it) in .tmp/test-durations.json as files finish; run-tests.mjs prints them, slowest first, at the end.
// Written file by file, not at the end of the stream: --test-force-exit ends the runner before a reporter's last
// words. Two runs (before and after a change, two concurrency settings) can be compared file by file.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sourcePath } from './test-paths.mjs';

export const DURATIONS_FILE = '.tmp/test-durations.json';

/** The recorder: called with every event of the run (scripts/test-reporter.mjs feeds it). */
export function recordDurations() {
  const startedAt = new Date().toISOString();
  const files = {};
  mkdirSync(path.dirname(DURATIONS_FILE), { recursive: true });
  return (event) => {
    if (event.type !== 'test:complete') return;
    const { name, file, nesting, details } = event.data;
    // the file itself: the runner reports each file's process as a test named by the file's path
    if (nesting !== 0 || !file || name !== file || typeof details?.duration_ms !== 'number') return;
    files[sourcePath(file)] = { ms: Math.round(details.duration_ms), passed: details.passed !== false };
    writeFileSync(DURATIONS_FILE, `${JSON.stringify({ startedAt, updatedAt: new Date().toISOString(), files }, null, 2)}\n`);
  };
}

/** As a reporter of its own (`--test-reporter=./scripts/test-durations.mjs`). */
export default async function* durations(source) {
  const record = recordDurations();
  for await (const event of source) record(event);
  yield '';
}
