// Shrinking a failing schedule with fast-check: the candidate is a mask over the schedule's steps, given to
// fast-check as a failing example (fast-check shrinks user examples), so its shrinker drops steps one at a
// time and restarts from each smaller schedule that still fails, until none of its removals fails.
// Each candidate is a real replay; past `maxReplays` every further candidate counts as passing, which ends
// the search with the smallest failing schedule found so far. Real timing varies between replays, so a step
// kept here may not be needed (its removal's replay just missed the race), and the schedule left may need a
// few replays to fail again.
import fc from 'fast-check';
import type { Outcome } from './run-schedule.js';

/** `run` replays a schedule: runSchedule for Redis, runConsensusSchedule for etcd and ZooKeeper. */
export async function shrink<S extends { readonly steps: readonly unknown[] }>(
  failing: S,
  maxReplays: number,
  run: (s: S) => Promise<Outcome>,
  log: (msg: string) => void = () => undefined,
): Promise<S> {
  const only = (mask: readonly boolean[]): S => ({ ...failing, steps: failing.steps.filter((_, i) => mask[i]) });
  const all = failing.steps.map(() => true);
  let replays = 0;
  let smallest = failing;
  const stillFails = async (mask: readonly boolean[]): Promise<boolean> => {
    // The example itself already failed: no need to replay it.
    if (mask.every(Boolean)) return true;
    if (replays >= maxReplays) return false;
    replays++;
    const candidate = only(mask);
    const fails = (await run(candidate)).violations.length > 0;
    const kept = mask.flatMap((on, i) => (on ? [i] : []));
    log(`steps ${kept.join(',') || '(none)'}: ${fails ? 'still fails' : 'passes'} (replay ${replays}/${maxReplays})`);
    if (fails && candidate.steps.length < smallest.steps.length) smallest = candidate;
    return fails;
  };
  await fc.check(
    fc.asyncProperty(fc.tuple(...all.map(() => fc.boolean())), async (mask) => !(await stillFails(mask))),
    // numRuns 1: only the example; fast-check then shrinks it (true -> false drops a step).
    { examples: [[all]], numRuns: 1 },
  );
  return smallest;
}
