// The cells of a --quick smoke run (test/bench/quick.test.ts runs it in `npm test`): every library adapter and
// every workload's code path at least once, not every combination. It measures nothing; it proves that a full
// run's cells would run. What it keeps:
// - per library, W1 (uncontended: the adapter's acquire and release) and W3 (contended: its retries, and the
//   clean-up of failed rounds), and W5 where it has auto-extension (the adapter's hold);
// - both a single node and 5 nodes where the adapter itself branches on the node count (another class, a
//   quorum of its own: LibraryEntry.nodeCountBranch): W1 and W3 on each;
// - fencelock on etcd and ZooKeeper (W1, W3): the adapter's consensus branch, and the run's own clusters;
// - the design's table for its three libraries, at two client counts;
// - W2 (concurrent callers on fresh keys: the same adapter calls as W1) for fencelock and the floor, and W4
//   (worker processes of its own, which call the same adapters as W3) for fencelock: each W4 cell costs two
//   more Node starts.
// - the fair bound (a reference for W4 alone, not a lock): W4 on one node.
// Every other library runs in one mode. A --quick run with --libraries or --modes runs what they name instead.
import type { Mode, WorkloadId } from './types.js';

export const SMOKE_CELLS: Readonly<Record<string, Partial<Record<Mode, readonly WorkloadId[]>>>> = {
  'fencelock/ioredis': { redlock5: ['W1', 'W2', 'W3', 'W4', 'W5'], redlock3: ['design'], etcd3: ['W1', 'W3'], zk3: ['W1', 'W3'] },
  'fencelock/node-redis': { single: ['W1', 'W3', 'W5'] },
  'raw-floor': { single: ['W1', 'W2', 'W3'], redlock5: ['W1', 'W3'], redlock3: ['design'] },
  'redlock@4': { single: ['W1', 'W3'] },
  'redlock@5-beta': { redlock5: ['W1', 'W3', 'W5'], redlock3: ['design'] },
  '@sesamecare-oss/redlock': { single: ['W1', 'W3', 'W5'] },
  'redis-semaphore': { single: ['W1', 'W3', 'W5'], redlock5: ['W1', 'W3'] },
  'redlock-universal': { redlock5: ['W1', 'W3', 'W5'], single: ['W1', 'W3'] },
  'fair-bound': { single: ['W4'] },
};

export function inSmokeRun(workload: WorkloadId, library: string, mode: Mode): boolean {
  return SMOKE_CELLS[library]?.[mode]?.includes(workload) ?? false;
}
