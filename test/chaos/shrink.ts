// Shrinking a failing schedule: replay it with one step removed at a time, keeping each removal after which
// the violation still shows, within a bound on replays. Real timing varies between replays, so a step kept
// here may not be needed (its removal's replay just missed the race), and a smaller schedule found here may
// need a few replays to fail again.
import type { Outcome } from './run-schedule.js';

/** `run` replays a schedule: runSchedule for Redis, runConsensusSchedule for etcd and ZooKeeper. */
export async function shrink<S extends { readonly steps: readonly unknown[] }>(
  failing: S,
  maxReplays: number,
  run: (s: S) => Promise<Outcome>,
  log: (msg: string) => void = () => undefined,
): Promise<S> {
  let current = failing;
  let replays = 0;
  // From the last step back: a later step is more often incidental to the violation than an earlier one.
  for (let i = current.steps.length - 1; i >= 0 && replays < maxReplays; i--) {
    if (current.steps.length === 0) break;
    const candidate: S = { ...current, steps: current.steps.filter((_, j) => j !== i) };
    replays++;
    const outcome = await run(candidate);
    const still = outcome.violations.length > 0;
    log(`without step ${i}: ${still ? 'still fails, removed' : 'passes, kept'} (replay ${replays}/${maxReplays})`);
    if (still) current = candidate;
  }
  return current;
}
