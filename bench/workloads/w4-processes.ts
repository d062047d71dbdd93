// W4 contention across processes: worker processes x callers on ONE key (w4-worker.ts), aggregated here.
// Holds carry machine-wide timestamps (performance.timeOrigin + now), so handoff gaps are computed across processes.
// metrics: as W3 (contention.ts summarize), plus processes and callersPerProcess. CPU: the workers' sum.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CpuCount, WorkloadResult } from '../types.js';
import { Meter, now, perOperation, sleepUntil, type WorkloadContext } from './common.js';
import { summarize, type ContentionRecord } from './contention.js';
import type { StartMessage, WorkerMessage } from './w4-worker.js';

const WORKER = fileURLToPath(new URL('./w4-worker.ts', import.meta.url));
const READY_TIMEOUT = 60_000;

interface Worker {
  child: ChildProcess;
  next(type: WorkerMessage['type'], timeoutMs: number): Promise<WorkerMessage>;
}

/** BENCH_CELL_PROF=<dir> (spawn-cell.ts): the workers write their CPU profiles there too. */
const PROFILE_DIR = process.env.BENCH_CELL_PROF;

/** Resolves once `child` exited, or after `ms`. */
function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function startWorker(spec: WorkloadContext['spec'], index: number): Worker {
  const prof = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', WORKER, JSON.stringify(spec), String(index)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox: WorkerMessage[] = [];
  let wake: (() => void) | undefined;
  let exited = false;
  child.on('message', (m) => {
    inbox.push(m as WorkerMessage);
    wake?.();
  });
  child.on('exit', () => {
    exited = true;
    wake?.();
  });
  const next = async (type: WorkerMessage['type'], timeoutMs: number): Promise<WorkerMessage> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const m = inbox.shift();
      if (m?.type === 'error') throw new Error(`W4 worker ${index}: ${m.error}`);
      if (m?.type === type) return m;
      if (m) continue;
      if (exited) throw new Error(`W4 worker ${index} exited (code ${child.exitCode}, signal ${child.signalCode}) before '${type}'`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    throw new Error(`W4 worker ${index}: no '${type}' within ${timeoutMs} ms`);
  };
  return { child, next };
}

export async function run({ spec, admin, profile }: WorkloadContext): Promise<WorkloadResult> {
  const { processes, callersPerProcess, durationMs, drainMs } = profile.w4;
  // The first worker warms up alone: the nodes were just flushed, and a library that sets a node up on first
  // use (fencelock's markers) should meet them once, as one deployment does, not four processes at once
  // (fencelock then sees some nodes set up and some not, and quarantines those as restarted: safe, slow).
  const workers = [startWorker(spec, 0)];
  try {
    await workers[0]?.next('ready', READY_TIMEOUT);
    for (let i = 1; i < processes; i++) workers.push(startWorker(spec, i));
    await Promise.all(workers.slice(1).map((w) => w.next('ready', READY_TIMEOUT)));
    const meter = await Meter.start(admin);
    const startAt = now() + 100;
    const endAt = startAt + durationMs;
    const start: StartMessage = { type: 'start', startAt, endAt, drainMs };
    for (const w of workers) w.child.send(start);
    const done = workers.map((w) => w.next('done', endAt - now() + drainMs + 10_000));
    done.forEach((p) => p.catch(() => undefined)); // awaited below; no unhandled rejection meanwhile
    await sleepUntil(endAt);
    const metered = await meter.stop();
    const results = (await Promise.all(done)) as Array<Extract<WorkerMessage, { type: 'done' }>>;
    const records: ContentionRecord[] = results.map((r) => r.record);
    const { metrics, fairness } = summarize(records, durationMs);
    const ops = metrics.acquisitions ?? 0;
    const workerCpu: CpuCount = {
      userUs: results.reduce((a, r) => a + r.cpu.userUs, 0),
      systemUs: results.reduce((a, r) => a + r.cpu.systemUs, 0),
      perOpUs: null,
    };
    const { commands, cpu } = perOperation({ commands: metered.commands, cpu: workerCpu }, ops);
    const errorSample = records.find((r) => r.errorSample)?.errorSample;
    return {
      ops,
      metrics: { ...metrics, processes, callersPerProcess },
      fairness,
      commands,
      cpu,
      errors: records.reduce((a, r) => a + r.errors, 0),
      ...(errorSample ? { errorSample } : {}),
    };
  } finally {
    // Profiled, a worker writes its profile as it exits: it gets a few seconds to (not SIGKILLed at once).
    if (PROFILE_DIR) await Promise.all(workers.map((w) => exited(w.child, 5_000)));
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  }
}
