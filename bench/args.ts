// Command line of bench/run.ts.
import { MODES, WORKLOADS } from './config.js';
import { LIBRARIES, SMOKE_LIBRARIES } from './libraries/index.js';
import type { Mode, ProfileName, WorkloadId } from './types.js';

export interface RunArgs {
  profile: ProfileName;
  /** write JSON, page and chart here instead of bench/results and docs/ */
  outDir: string | undefined;
  libraries: string[];
  workloads: WorkloadId[];
  modes: Mode[];
}

export const USAGE = `usage: node --import tsx bench/run.ts [--quick] [--out <dir>]
       [--libraries <id,...>] [--workloads W1,...] [--modes single,redlock5,etcd3,zk3]
  --quick       tiny counts and durations (a smoke test, not a measurement; without the previous release)
  --out <dir>   write <date>.json, benchmarks.md and benchmarks.svg to <dir> instead of bench/results and docs/
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
    modes: [...MODES],
  };
  let chosen = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string | undefined => argv[++i];
    if (a === '--quick') args.profile = 'quick';
    else if (a === '--out') {
      const dir = value();
      if (!dir) throw new Error(`--out needs a directory\n${USAGE}`);
      args.outDir = dir;
    } else if (a === '--libraries') {
      chosen = true;
      args.libraries = list(
        value(),
        LIBRARIES.map((l) => l.id),
        'library',
      );
    } else if (a === '--workloads') args.workloads = list(value(), WORKLOADS, 'workload');
    else if (a === '--modes') args.modes = list(value(), MODES, 'mode');
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  if (args.profile === 'quick' && !chosen) args.libraries = SMOKE_LIBRARIES.map((l) => l.id);
  return args;
}
