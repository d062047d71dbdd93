// scripts/run-tests.mjs's own reporter, beside spec or TAP: one pass over the run's events feeds each recorder,
// the files' wall times (test-durations.mjs) and the whole output of each file that fails (test-failures.mjs).
// One reporter, not one per recorder: each reporter adds listeners to the runner's stream, and a third one
// passed Node's limit of ten (a MaxListenersExceededWarning on every run).
import { recordDurations } from './test-durations.mjs';
import { keepFailures } from './test-failures.mjs';

export default async function* reporter(source) {
  const recorders = [recordDurations(), keepFailures()];
  for await (const event of source) for (const record of recorders) record(event);
  yield '';
}
