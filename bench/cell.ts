// The cell process: runs its cells one after another (a full run gives it one: plan.ts), each from nodes reset to
// the same state and with a library object of its own, reports each over IPC, then exits.
// argv: <CellSpec[] JSON>. Started by spawn-cell.ts with --expose-gc (W5 needs it).
import { PROFILES } from './config.js';
import { createLibrary } from './libraries/index.js';
import { RedisAdmin } from './redis-admin.js';
import type { CellSpec, LockLibrary, WorkloadResult } from './types.js';
import { errorText, settleWithin } from './workloads/common.js';
import { WORKLOAD_ENTRIES } from './workloads/index.js';

export type CellMessage = { type: 'result'; index: number; result: WorkloadResult } | { type: 'error'; index: number; error: string };

const send = (m: CellMessage): Promise<void> => new Promise((resolve) => process.send?.(m, undefined, {}, () => resolve()));

async function runOne(spec: CellSpec, admin: RedisAdmin): Promise<WorkloadResult> {
  const profile = PROFILES[spec.profile];
  const workload = WORKLOAD_ENTRIES[spec.workload];
  // Empty data, script cache and statistics on every node: each cell starts from the same state.
  await admin.reset();
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
    if (lib) await settleWithin([lib.close()], 5_000);
  }
}

async function main(): Promise<void> {
  const specs = JSON.parse(process.argv[2] ?? '') as CellSpec[];
  const admin = await RedisAdmin.connect(specs[0]?.statsUrls ?? []);
  try {
    for (const [index, spec] of specs.entries()) {
      try {
        await send({ type: 'result', index, result: await runOne(spec, admin) });
      } catch (e) {
        await send({ type: 'error', index, error: errorText(e) });
      }
    }
  } finally {
    await settleWithin([admin.close()], 5_000);
  }
}

process.on('disconnect', () => process.exit(1)); // the orchestrator is gone: do not linger
main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(errorText(e)); // no cell could run (the admin connections): spawn-cell.ts reports the output
    process.exit(1);
  },
);
