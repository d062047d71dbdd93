// The libraries under test, in table order. Adapters are imported on demand, so a cell process loads only its own.
import type { LibraryContext, LibraryModule, LockLibrary } from '../types.js';

export interface LibraryEntry {
  id: string;
  /** npm package whose version is recorded (bench/node_modules, else the root's) */
  pkg: string;
  /** has auto-extension: takes part in W5 */
  autoExtend: boolean;
  /** runs on etcd and ZooKeeper too: takes part in the etcd3 and zk3 modes */
  consensus?: true;
  /** the adapter takes another path on one node than on several (another class, a quorum): smoke-run in both */
  nodeCountBranch?: true;
  /** an earlier fencelock, built from git on first use (bench/previous.ts): not part of a --quick smoke run */
  previous?: true;
  /** a reference for W4 alone, not a lock (fair-bound.ts): planned for W4 on Redis only */
  w4Only?: true;
  load(): Promise<LibraryModule>;
}

export const LIBRARIES: readonly LibraryEntry[] = [
  { id: 'fencelock/ioredis', pkg: 'fencelock', autoExtend: true, consensus: true, load: () => import('./fencelock-ioredis.js') },
  { id: 'fencelock/node-redis', pkg: 'fencelock', autoExtend: true, load: () => import('./fencelock-node-redis.js') },
  { id: 'fencelock/ioredis@previous', pkg: 'fencelock', autoExtend: true, previous: true, load: () => import('./fencelock-previous.js') },
  { id: 'raw-floor', pkg: 'ioredis', autoExtend: false, nodeCountBranch: true, load: () => import('./raw-floor.js') },
  { id: 'redlock@4', pkg: 'redlock-v4', autoExtend: false, load: () => import('./redlock-v4.js') },
  { id: 'redlock@5-beta', pkg: 'redlock-v5', autoExtend: true, load: () => import('./redlock-v5.js') },
  { id: '@sesamecare-oss/redlock', pkg: '@sesamecare-oss/redlock', autoExtend: true, load: () => import('./sesamecare-redlock.js') },
  { id: 'redis-semaphore', pkg: 'redis-semaphore', autoExtend: true, nodeCountBranch: true, load: () => import('./redis-semaphore.js') },
  {
    id: 'redlock-universal',
    pkg: 'redlock-universal',
    autoExtend: true,
    nodeCountBranch: true,
    load: () => import('./redlock-universal.js'),
  },
  { id: 'fair-bound', pkg: 'ioredis', autoExtend: false, w4Only: true, load: () => import('./fair-bound.js') },
];

/** What a --quick smoke run measures by default: the harness with every library, without building an old release. */
export const SMOKE_LIBRARIES: readonly LibraryEntry[] = LIBRARIES.filter((l) => !l.previous);

export function libraryEntry(id: string): LibraryEntry {
  const entry = LIBRARIES.find((l) => l.id === id);
  if (!entry) throw new Error(`unknown library ${id}; known: ${LIBRARIES.map((l) => l.id).join(', ')}`);
  return entry;
}

/** Why a cell does not apply (status n/a), or undefined when it runs. */
export function notApplicable(lib: LibraryEntry, workload: string, mode: string): string | undefined {
  if ((mode === 'etcd3' || mode === 'zk3') && !lib.consensus) return 'Redis only';
  if (lib.w4Only && workload !== 'W4') return 'a reference for W4 only';
  if ((workload === 'design') !== (mode === 'redlock3')) return 'the design table alone runs on 3 nodes';
  // 10,000 held locks on etcd are 10,000 leases renewed every second: a load test of etcd, not of the client.
  if (mode === 'etcd3' && workload === 'W5') return 'not measured on etcd';
  // The same on ZooKeeper: 10,000 ephemeral znodes and their watches, one session renewed by pings.
  if (mode === 'zk3' && workload === 'W5') return 'not measured on ZooKeeper';
  if (workload === 'W5' && !lib.autoExtend) return 'no auto-extension';
  return undefined;
}

export async function createLibrary(id: string, ctx: LibraryContext): Promise<LockLibrary> {
  return (await libraryEntry(id).load()).create(ctx);
}
