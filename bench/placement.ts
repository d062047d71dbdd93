// Diagnostic only, not a benchmark: W1 on one node with the client and the Redis node pinned to CPUs, so that
// where the scheduler puts them is no longer part of the figure (docs/benchmarks.md, "W1 and where the
// scheduler puts the processes"). Each cell is a fresh process, as in W1: the library's adapter from the
// benchmark (bench/libraries/), W1's warm-up pairs (200), then its timed ones (2,000) on fresh keys, p50 of the pair.
//
//   together  the client and its node on CPU 1: every round trip is a hand-off between two processes of
//             one CPU, so the pair costs about what both spend on CPU
//   apart     the client on CPU 1, the node on CPU 0: every round trip crosses CPUs (on a VM, a wake-up of
//             the other virtual CPU), as a client and a server on separate machines never share one
//
// Rounds alternate the libraries and placements (floor, fencelock, floor, fencelock, ...). Prints each run and,
// per placement, the medians and fencelock's ratio to the floor. Needs Linux, `taskset` (util-linux) and 2 CPUs.
//
//   npm run build && node --import tsx bench/placement.ts [--rounds 3]
import { execFileSync, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { PROFILES } from './config.js';
import { numberOption } from './diagnostic-args.js';
import { percentile } from './stats.js';
import { timedPairs } from './workloads/w1-latency.js';

const LIBRARIES = ['raw-floor', 'fencelock/ioredis'] as const;
const PLACEMENTS = { together: '1', apart: '0' } as const;
type Placement = keyof typeof PLACEMENTS;
const { warmupPairs: WARMUP, w1 } = PROFILES.full;

interface CellRun {
  library: string;
  placement: Placement;
  p50Us: number;
}

if (process.argv[2] === '--cell') await cell(process.argv[3] as string, process.argv[4] as Placement);
else await main();

/** One cell, in this (pinned) process: prints its p50 as JSON. */
async function cell(library: string, placement: Placement): Promise<void> {
  const { startRedisNode } = await import('../src/testing/index.js');
  const { libraryEntry } = await import('./libraries/index.js');
  const node = await startRedisNode();
  try {
    // The node inherited this process's CPU; 'apart' moves it (and its threads) to the other one.
    const pid = node.pid;
    if (pid === undefined) throw new Error('the Redis node has no pid');
    execFileSync('taskset', ['-a', '-p', '-c', PLACEMENTS[placement], String(pid)], { stdio: 'ignore' });
    const lib = (await libraryEntry(library).load()).create({ w5Ttl: 3_000 });
    await lib.setup([node.url], 'single');
    await timedPairs(lib, 'placement:warmup', WARMUP);
    const { pair } = await timedPairs(lib, 'placement', w1.ops);
    await lib.close();
    const run: CellRun = { library, placement, p50Us: (percentile(pair, 50) as number) * 1000 };
    console.log(JSON.stringify(run));
  } finally {
    await node.stop();
  }
}

async function main(): Promise<void> {
  if (process.platform !== 'linux' || availableParallelism() < 2) throw new Error('needs Linux and 2 CPUs');
  const rounds = numberOption(process.argv.slice(2), '--rounds', 3);
  const runs: CellRun[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const placement of Object.keys(PLACEMENTS) as Placement[]) {
      for (const library of LIBRARIES) {
        const run = await spawnCell(library, placement);
        runs.push(run);
        console.log(`round ${round}  ${placement.padEnd(8)}  ${library.padEnd(17)}  W1 p50 ${run.p50Us.toFixed(0)} µs`);
      }
    }
  }
  for (const placement of Object.keys(PLACEMENTS) as Placement[]) {
    const median = (library: string): number =>
      percentile(
        runs.filter((r) => r.placement === placement && r.library === library).map((r) => r.p50Us),
        50,
      ) as number;
    const [floor, fencelock] = LIBRARIES.map(median) as [number, number];
    console.log(
      `${placement}: the floor ${floor.toFixed(0)} µs, fencelock ${fencelock.toFixed(0)} µs (${(fencelock / floor).toFixed(2)}×), medians of ${rounds} runs`,
    );
  }
}

/** Runs one cell in a fresh process on CPU 1 and returns what it printed. */
function spawnCell(library: string, placement: Placement): Promise<CellRun> {
  const args = ['-c', '1', process.execPath, '--import', 'tsx', new URL(import.meta.url).pathname, '--cell', library, placement];
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`cell ${library} ${placement} exited ${code}: ${out}`));
      else resolve(JSON.parse(line) as CellRun);
    });
  });
}
