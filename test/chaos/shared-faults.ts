// The faults every backend's runner applies the same way: a process paused (a node, a member or a worker),
// latency on one path, a cut of some paths. Each undoes itself when its time is up.
import { freeze, thaw, type Proxy, type WorkerPool } from '../support/faults/index.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SIGSTOP a server process, SIGCONT after `ms`. */
export async function pauseServer(server: { pause(): void; resume(): void }, ms: number): Promise<void> {
  server.pause();
  try {
    await sleep(ms);
  } finally {
    server.resume();
  }
}

/** SIGSTOP a worker process (it may hold a lock), SIGCONT after `ms`; a worker that already exited is left alone. */
export async function pauseWorker(pool: WorkerPool, worker: number, ms: number): Promise<void> {
  const w = pool.workers[worker]!;
  if (!w.running) return;
  freeze(w);
  try {
    await sleep(ms);
  } finally {
    thaw(w);
  }
}

/** Each direction through `proxy` delayed by `latencyMs`, for `ms`. */
export async function addLatency(proxy: Proxy, latencyMs: number, ms: number): Promise<void> {
  proxy.setLatency(latencyMs);
  await sleep(ms);
  proxy.setLatency(0);
}

/** The paths through `cut` proxies blackholed (hung) or reset, for `ms`. */
export async function cutPaths(cut: readonly Proxy[], how: 'blackhole' | 'reset', ms: number): Promise<void> {
  for (const p of cut) {
    if (how === 'blackhole') p.blackhole();
    else p.partition();
  }
  await sleep(ms);
  for (const p of cut) p.heal();
}
