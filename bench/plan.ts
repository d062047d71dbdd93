// Which cells a run measures, in report order, and which process runs each. `npm run bench` (full profile) runs
// every cell in a fresh process of its own, as the method asks: a short-lived process's cold path is
// part of what is measured. A --quick run measures nothing, so it runs its cells one after another in one
// process (a fresh library object per cell, the nodes reset between): the same code, far fewer Node starts
// (each costs 1-2 s of CPU on this machine, as much as several quick cells).
import { DESIGN_LIBRARIES, type Profile } from './config.js';
import type { RunArgs } from './args.js';
import { libraryEntry, notApplicable } from './libraries/index.js';
import { runOrder } from './repeats.js';
import { inSmokeRun } from './smoke.js';
import type { CellId, Mode } from './types.js';

export interface PlannedCell extends CellId {
  /** why it does not apply (reported as n/a, not run) */
  skip?: string;
}

export interface Plan {
  /** every cell, in the order of the report's tables */
  cells: PlannedCell[];
  /** the cells that run (indexes into cells), grouped by process, in run order; a repeated cell (repeats.ts) appears once per run */
  batches: number[][];
}

const CONSENSUS: readonly Mode[] = ['etcd3', 'zk3'];

export function planRun(args: RunArgs, profile: Profile): Plan {
  const cells: PlannedCell[] = [];
  for (const workload of args.workloads) {
    if (workload === 'design') {
      // its own mode, whatever --modes says; its three libraries, or those of them --libraries names
      const libs = DESIGN_LIBRARIES.filter((id) => args.libraries.includes(id));
      for (const clients of profile.design.clients)
        for (const library of libs) cells.push({ workload, library, mode: 'redlock3', clients });
      continue;
    }
    for (const mode of args.modes)
      for (const library of args.libraries) {
        // The fair bound is measured where it means something (W4 on Redis), and not listed elsewhere.
        if (libraryEntry(library).w4Only && (workload !== 'W4' || CONSENSUS.includes(mode))) continue;
        const skip = notApplicable(libraryEntry(library), workload, mode);
        cells.push({ workload, library, mode, ...(skip ? { skip } : {}) });
      }
  }
  const planned = args.smokePlan ? cells.filter((c) => inSmokeRun(c.workload, c.library, c.mode)) : cells;
  const running = planned.map((c, i) => [c, i] as const).filter(([c]) => !c.skip);
  if (args.profile === 'full')
    return {
      cells: planned,
      batches: runOrder(
        planned,
        running.map(([, i]) => i),
        profile.repeats,
      ).map((i) => [i]),
    };
  // quick: the Redis cells in one process, the etcd and ZooKeeper cells in another, run last, so that those
  // clusters (a ZooKeeper ensemble takes seconds to start) come up while the Redis cells run
  const redis = running.filter(([c]) => !CONSENSUS.includes(c.mode)).map(([, i]) => i);
  const consensus = running.filter(([c]) => CONSENSUS.includes(c.mode)).map(([, i]) => i);
  return { cells: planned, batches: [redis, consensus].filter((b) => b.length > 0) };
}
