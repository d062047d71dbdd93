// The workloads, by id. W4 runs its callers in worker processes of its own, so its cell sets up no library.
import type { WorkloadId, WorkloadResult } from '../types.js';
import type { WorkloadContext } from './common.js';

export interface WorkloadEntry {
  id: WorkloadId;
  title: string;
  /** the cell process itself uses the library (W4: only its workers do) */
  inProcess: boolean;
  load(): Promise<{ run(ctx: WorkloadContext): Promise<WorkloadResult> }>;
}

export const WORKLOAD_ENTRIES: Record<WorkloadId, WorkloadEntry> = {
  W1: { id: 'W1', title: 'W1 — uncontended latency', inProcess: true, load: () => import('./w1-latency.js') },
  W2: { id: 'W2', title: 'W2 — uncontended throughput', inProcess: true, load: () => import('./w2-throughput.js') },
  W3: { id: 'W3', title: 'W3 — contention in one process', inProcess: true, load: () => import('./w3-contention.js') },
  W4: { id: 'W4', title: 'W4 — contention across processes', inProcess: false, load: () => import('./w4-processes.js') },
  W5: { id: 'W5', title: 'W5 — memory with auto-extension', inProcess: true, load: () => import('./w5-memory.js') },
  design: {
    id: 'design',
    title: 'design — 3 nodes, clients each on a key of their own',
    inProcess: true,
    load: () => import('./design.js'),
  },
};
