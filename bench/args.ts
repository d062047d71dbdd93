// Command line of bench/run.ts.
import { MODES, WORKLOADS } from './config.js';
import { EXTERNAL_WORKLOADS } from './external.js';
import { LIBRARIES, SMOKE_LIBRARIES } from './libraries/index.js';
import type { Mode, ProfileName, WorkloadId } from './types.js';

export interface RunArgs {
  profile: ProfileName;
  /** write JSON, page and chart here instead of bench/results and docs/ */
  outDir: string | undefined;
  libraries: string[];
  /** the cells' workloads */
  workloads: WorkloadId[];
  /** workloads run by scripts of their own after the cells (external.ts): `burst` */
  external: string[];
  modes: Mode[];
  /** --quick without --libraries or --modes: the smoke run's cells only (smoke.ts) */
  smokePlan: boolean;
  /** some of the run chosen (--libraries, --workloads, --modes): without --out it writes to PARTIAL_OUT, not docs/ */
  partial: boolean;
}

/** Where a partial run writes without --out: a part of a run must not replace the docs page's full results. */
export const PARTIAL_OUT = '.tmp/bench';

const EXTERNAL_IDS = EXTERNAL_WORKLOADS.map((w) => w.id);

export const USAGE = `usage: node --import tsx bench/run.ts [--quick] [--out <dir>]
       [--libraries <id,...>] [--workloads W1,...] [--modes single,redlock5,etcd3,zk3]
  --quick       tiny counts and durations, the smoke run's cells (bench/smoke.ts); a smoke test, not a
                measurement; without the previous release and without ${EXTERNAL_IDS.join(', ')}
  --out <dir>   write <date>.json, benchmarks.md and benchmarks.svg to <dir> instead of bench/results and docs/
                (a --quick run, or one with --libraries, --workloads or --modes: to ${PARTIAL_OUT} unless --out says)
  workloads: ${[...WORKLOADS, ...EXTERNAL_IDS].join(', ')} (design: the design's table, on 3 nodes whatever
             --modes says; ${EXTERNAL_IDS.join(', ')}: a script of its own, run after the cells)
  libraries: ${LIBRARIES.map((l) => l.id).join(', ')}`;

function list<T extends string>(value: string | undefined, known: readonly T[], what: string): T[] {
  if (value === undefined) throw new Error(`${what} needs a value\n${USAGE}`);
  const items = value.split(',').filter(Boolean);
  for (const item of items) if (!known.includes(item as T)) throw new Error(`unknown ${what} ${item}; known: ${known.join(', ')}`);
  return items as T[];
}

export function parseArgs(argv: readonly string[]): RunArgs {
  const args: RunArgs = {
    profile: 'full',
    outDir: undefined,
    libraries: LIBRARIES.map((l) => l.id),
    workloads: [...WORKLOADS],
    external: [...EXTERNAL_IDS],
    modes: [...MODES],
    smokePlan: false,
    partial: false,
  };
  let librariesChosen = false;
  let modesChosen = false;
  let workloadsChosen = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string | undefined => argv[++i];
    if (a === '--quick') args.profile = 'quick';
    else if (a === '--out') {
      const dir = value();
      if (!dir) throw new Error(`--out needs a directory\n${USAGE}`);
      args.outDir = dir;
    } else if (a === '--libraries') {
      librariesChosen = true;
      args.libraries = list(
        value(),
        LIBRARIES.map((l) => l.id),
        'library',
      );
    } else if (a === '--workloads') {
      workloadsChosen = true;
      const chosen = list<string>(value(), [...WORKLOADS, ...EXTERNAL_IDS], 'workload');
      args.workloads = WORKLOADS.filter((w) => chosen.includes(w));
      args.external = EXTERNAL_IDS.filter((w) => chosen.includes(w));
    } else if (a === '--modes') {
      modesChosen = true;
      args.modes = list(value(), MODES, 'mode');
    } else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  args.partial = librariesChosen || workloadsChosen || modesChosen;
  if (args.profile === 'quick') {
    if (!librariesChosen) args.libraries = SMOKE_LIBRARIES.map((l) => l.id);
    if (!workloadsChosen) args.external = [];
    args.smokePlan = !librariesChosen && !modesChosen;
  }
  return args;
}
