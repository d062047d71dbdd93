// One (workload, library, mode) cell in a fresh process: set up, run the workload, report over IPC, exit.
// argv: <CellSpec JSON>. Started by run.ts with --expose-gc (W5 needs it).
import { PROFILES } from './config.js';
import { createLibrary } from './libraries/index.js';
import { RedisAdmin } from './redis-admin.js';
import type { CellSpec, LockLibrary, WorkloadResult } from './types.js';
import { errorText, settleWithin } from './workloads/common.js';
import { WORKLOAD_ENTRIES } from './workloads/index.js';

export type CellMessage = { type: 'result'; result: WorkloadResult } | { type: 'error'; error: string };

const send = (m: CellMessage): Promise<void> => new Promise((resolve) => process.send?.(m, undefined, {}, () => resolve()));

async function main(): Promise<WorkloadResult> {
  const spec = JSON.parse(process.argv[2] ?? '') as CellSpec;
  const profile = PROFILES[spec.profile];
  const workload = WORKLOAD_ENTRIES[spec.workload];
  const admin = await RedisAdmin.connect(spec.statsUrls);
  let lib: LockLibrary | undefined;
  try {
    if (workload.inProcess) {
      lib = await createLibrary(spec.library, { w5Ttl: profile.w5.ttl });
      await lib.setup(spec.urls, spec.mode);
    }
    const { run } = await workload.load();
    return await run({ spec, profile, lib, admin });
  } finally {
    // bounded: a library that cannot close must not turn a measured cell into a timed-out one
    const closing = [admin.close(), ...(lib ? [lib.close()] : [])];
    await settleWithin(closing, 5_000);
  }
}

process.on('disconnect', () => process.exit(1)); // the orchestrator is gone: do not linger
main().then(
  async (result) => {
    await send({ type: 'result', result });
    process.exit(0);
  },
  async (e: unknown) => {
    await send({ type: 'error', error: errorText(e) });
    process.exit(1);
  },
);
