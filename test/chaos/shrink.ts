// Shrinking a failing schedule: replay it with one step removed at a time, keeping each removal after which
// the violation still shows, within a bound on replays. Real timing varies between replays, so a step kept
// here may not be needed (its removal's replay just missed the race), and a smaller schedule found here may
// need a few replays to fail again.
import { runSchedule } from './run-schedule.js';
import type { Schedule } from './schedule.js';

export async function shrink(failing: Schedule, maxReplays: number, log: (msg: string) => void = () => undefined): Promise<Schedule> {
  let current = failing;
  let replays = 0;
  // From the last step back: a later step is more often incidental to the violation than an earlier one.
  for (let i = current.steps.length - 1; i >= 0 && replays < maxReplays; i--) {
    if (current.steps.length === 0) break;
    const candidate: Schedule = { ...current, steps: current.steps.filter((_, j) => j !== i) };
    replays++;
    const outcome = await runSchedule(candidate);
    const still = outcome.violations.length > 0;
    log(`without step ${i}: ${still ? 'still fails, removed' : 'passes, kept'} (replay ${replays}/${maxReplays})`);
    if (still) current = candidate;
  }
  return current;
}
