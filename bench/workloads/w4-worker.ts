// One W4 worker process: its callers contend for the key shared with the other workers; talks to its cell over IPC.
// argv: <cell spec JSON> <worker index>
import { PROFILES } from '../config.js';
import { createLibrary } from '../libraries/index.js';
import type { CellSpec, CpuCount } from '../types.js';
import { errorText, now, warmup } from './common.js';
import { contend, type ContentionRecord } from './contention.js';

export type WorkerMessage =
  { type: 'ready' } | { type: 'done'; record: ContentionRecord; cpu: CpuCount } | { type: 'error'; error: string };
export interface StartMessage {
  type: 'start';
  startAt: number;
  endAt: number;
  drainMs: number;
}

const send = (m: WorkerMessage): Promise<void> => new Promise((resolve) => process.send?.(m, undefined, {}, () => resolve()));

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as CellSpec;
  const index = Number(process.argv[3]);
  const profile = PROFILES[spec.profile];
  const { callersPerProcess, holdMs } = profile.w4;
  const lib = await createLibrary(spec.library, { w5Ttl: profile.w5.ttl, w4: { index, processes: profile.w4.processes } });
  await lib.setup(spec.urls, spec.mode);
  await warmup(lib, profile.warmupPairs, `w4:${index}`);
  const start = new Promise<StartMessage>((resolve) => process.once('message', (m) => resolve(m as StartMessage)));
  await send({ type: 'ready' });
  const { startAt, endAt, drainMs } = await start;
  const cpuBefore = process.cpuUsage();
  let cpu: NodeJS.CpuUsage = { user: 0, system: 0 };
  const cpuTimer = setTimeout(() => (cpu = process.cpuUsage(cpuBefore)), Math.max(0, endAt - now()));
  const record = await contend(lib, { key: 'w4:resource', callers: callersPerProcess, holdMs, startAt, endAt, drainMs });
  clearTimeout(cpuTimer);
  if (cpu.user === 0 && cpu.system === 0) cpu = process.cpuUsage(cpuBefore);
  await send({ type: 'done', record, cpu: { userUs: cpu.user, systemUs: cpu.system, perOpUs: null } });
  await lib.close();
}

process.on('disconnect', () => process.exit(1)); // the cell is gone: do not linger
main().then(
  () => process.exit(0),
  async (e: unknown) => {
    await send({ type: 'error', error: errorText(e) });
    process.exit(1);
  },
);
