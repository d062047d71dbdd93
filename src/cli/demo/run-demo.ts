import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedisNodes, type LocalRedisNodes } from '../../testing/index.js';
import { CliError, colours, toJson } from '../output.js';
import { unreachable } from '../reach.js';
import { Chaos, seededRandom, type ChaosTargets } from './chaos.js';
import { minTtl, startCluster, type DemoBackend, type LocalCluster } from './clusters.js';
import type { ParentMessage, WorkerMessage } from './protocol.js';
import { handoffGaps, percentile, type DemoReport, type Hold } from './stats.js';
import { FencedStock } from './store.js';

export interface DemoOptions {
  nodes?: string[];
  storage?: string;
  workers: number;
  stock: number;
  ttl: number;
  seed: number;
  chaos: boolean;
  json: boolean;
  /** where the locks live: local Redis nodes (default), a local 3-member etcd cluster or a local 3-server ZooKeeper ensemble */
  backend?: DemoBackend;
}

/**
 * The stock-deduction scenario: worker processes sell one SKU under a
 * fencelock lock, with faults injected on the way, and a verdict at the end.
 * Resolves with the report; `report.ok` is false when an invariant broke.
 */
export async function runDemo(o: DemoOptions): Promise<DemoReport> {
  const out = process.stdout;
  const c = colours(out);
  const log = (line: string): void => {
    if (!o.json) ui.line(line);
  };
  const ui = progressUi(out, o.json);

  if (o.ttl < minTtl(o.backend)) o = { ...o, ttl: minTtl(o.backend) };
  const local = await startLocalNodes(o);
  let cluster: LocalCluster | undefined;
  const workers: ChildProcess[] = [];
  const storageUrl = o.storage ?? local!.urls[local!.urls.length - 1]!;
  const storageClient = new Redis(storageUrl, { maxRetriesPerRequest: 2 });
  storageClient.on('error', () => undefined);
  try {
    cluster = await startCluster(o.backend);
    const lockUrls = cluster ? [cluster.url] : (o.nodes ?? local!.urls.slice(0, 5));
    const store = new FencedStock(storageClient, `fencelock-demo:{sku:1}:${Date.now()}`);
    await store.init(o.stock);
    const quorum = Math.floor(lockUrls.length / 2) + 1;
    log(c('bold', `fencelock demo: stock deduction`) + ` - ${o.workers} worker processes, stock ${o.stock}, ttl ${o.ttl} ms`);
    if (cluster) log(`lock store: ${cluster.description}: ${cluster.url}`);
    else log(`lock nodes (${lockUrls.length}, quorum ${quorum}): ${lockUrls.join(' ')}`);
    log(`storage node (fenced writes): ${storageUrl}`);
    const what = cluster ? cluster.chaosPlan : 'a node killed at 1/3, a worker frozen at 1/2, a node paused at 2/3';
    log(o.chaos ? `chaos: on (seed ${o.seed}) - ${what}` : 'chaos: off');

    const events: string[] = [];
    const started = performance.now();
    const announce = (text: string): void => {
      const stamp = ((performance.now() - started) / 1000).toFixed(1).padStart(5);
      events.push(`${stamp}s ${text}`);
      log(`${c('dim', `${stamp}s`)} ${c('yellow', '!')} ${text}`);
    };

    const holds: Hold[] = [];
    let sold = 0;
    let lost = 0;
    let holder = '-';
    const freezeWaiters = new Map<number, (pid: number) => void>();
    const chaos = new Chaos(o.chaos ? chaosTargets(cluster, o.nodes ? undefined : local) : undefined, o.ttl, seededRandom(o.seed), {
      announce,
      freezeWorker: () => {
        if (!o.chaos) return Promise.resolve(undefined);
        const alive = workers.map((w, id) => ({ w, id })).filter(({ w }) => w.connected);
        const target = alive[Math.floor(seededRandom(o.seed + 1)() * alive.length)];
        if (!target) return Promise.resolve(undefined);
        return new Promise((resolve) => {
          freezeWaiters.set(target.id, (pid) => resolve({ id: target.id, pid }));
          target.w.send({ type: 'freeze-next' } satisfies ParentMessage);
        });
      },
    });
    // With --nodes the lock nodes are someone else's: only the worker freeze is injected then.
    if (o.chaos && o.nodes) announce('using your lock nodes: node faults skipped, worker freeze only');

    const finished = Array.from({ length: o.workers }, (_, id) => {
      const worker = fork(workerPath(), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(worker);
      return new Promise<void>((resolve, reject) => {
        worker.on('message', (m: WorkerMessage) => {
          switch (m.type) {
            case 'holding':
              holder = `worker ${m.worker} (fence ${m.fence})`;
              break;
            case 'freeze-me':
              freezeWaiters.get(m.worker)?.(worker.pid as number);
              freezeWaiters.delete(m.worker);
              break;
            case 'lost':
              lost++;
              announce(`worker ${m.worker} saw its lock lost (fence ${m.fence}): lock.signal aborted`);
              break;
            case 'error':
              ui.note(`worker ${m.worker}: ${m.message}`);
              break;
            case 'hold':
              holds.push({
                worker: m.worker,
                fence: BigInt(m.fence),
                waitMs: m.waitMs,
                acquiredAt: BigInt(m.acquiredAt),
                releasedAt: BigInt(m.releasedAt),
              });
              if (m.sold) sold++;
              if (m.stale) {
                announce(`stale write by worker ${m.worker} (fence ${m.fence}) rejected by the store`);
              }
              if (m.sold) chaos.progress(sold / o.stock);
              ui.progress({ sold, stock: o.stock, seconds: (performance.now() - started) / 1000, holder });
              break;
          }
        });
        worker.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`worker ${id} exited with ${signal ?? code}`))));
        worker.send({
          type: 'start',
          config: { id, lockUrls, storageUrl, key: store.key, ttl: o.ttl, workMs: 2 },
        } satisfies ParentMessage);
      });
    });
    await Promise.all(finished);
    await chaos.settle();
    ui.done();

    const wallTimeMs = performance.now() - started;
    const state = await store.state();
    const waits = holds.map((h) => h.waitMs).sort((a, b) => a - b);
    const gaps = handoffGaps(holds);
    const byAcquire = [...holds].sort((a, b) => (a.acquiredAt < b.acquiredAt ? -1 : 1));
    const fencesIncreasing = byAcquire.every((h, i) => i === 0 || h.fence > (byAcquire[i - 1] as Hold).fence);
    // Every accepted write took exactly one unit off: anything else is a double sale or an oversell.
    const oversold = Math.max(0, state.accepted - (o.stock - state.stock)) + Math.max(0, -state.stock);
    const failures: string[] = [];
    if (oversold > 0) failures.push(`oversold ${oversold}`);
    if (state.accepted !== o.stock || state.stock !== 0) failures.push(`sold ${state.accepted} of ${o.stock}, stock left ${state.stock}`);
    if (!fencesIncreasing) failures.push('fences did not increase in acquisition order');
    const report: DemoReport = {
      unitsSold: state.accepted,
      stock: o.stock,
      stockLeft: state.stock,
      oversold,
      staleWritesRejected: state.rejected,
      acquisitions: holds.length,
      locksLost: lost,
      acquireWaitMs: { p50: round(percentile(waits, 0.5)), p99: round(percentile(waits, 0.99)) },
      handoffGapMs: { p50: round(percentile(gaps, 0.5)), p99: round(percentile(gaps, 0.99)) },
      nodeFaultsSurvived: chaos.nodeFaults,
      workerFreezes: chaos.freezes,
      fencesIncreasing,
      wallTimeMs: Math.round(wallTimeMs),
      chaos: o.chaos,
      events,
      localNodes: [...(local?.nodes.map((n) => ({ url: n.url, pid: n.pid })) ?? []), ...(cluster?.processes() ?? [])],
      ok: failures.length === 0,
      failures,
    };
    if (o.json) out.write(toJson(report) + '\n');
    else printReport(report, c);
    return report;
  } finally {
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    storageClient.disconnect();
    await cluster?.stop();
    await local?.stop();
  }
}

/** What the chaos hits: the cluster's members (the leader is the one killed), or the 5 local Redis lock nodes. */
function chaosTargets(cluster: LocalCluster | undefined, local: LocalRedisNodes | undefined): ChaosTargets | undefined {
  if (cluster) return cluster.chaos;
  if (!local) return undefined;
  const nodes = local.nodes.slice(0, 5);
  return {
    nodes,
    label: (i) => `lock node ${i + 1} (${nodes[i]?.port})`,
    restarted: 'empty (restart quarantine keeps it out for one TTL)',
  };
}

async function startLocalNodes(o: DemoOptions): Promise<LocalRedisNodes | undefined> {
  const given = [...(o.nodes ?? []), ...(o.storage ? [o.storage] : [])];
  if (given.length > 0) {
    const down = await unreachable(given);
    if (down.length > 0) throw new CliError(`cannot reach ${down.map((d) => `${d.url} (${d.reason})`).join(', ')}`, 1);
  }
  const needed = (o.nodes || (o.backend ?? 'redis') !== 'redis' ? 0 : 5) + (o.storage ? 0 : 1);
  if (needed === 0) return undefined;
  const nodes = await startRedisNodes(needed);
  // Start-up order: lock nodes first, the storage node last (runDemo picks them by position).
  return nodes;
}

function workerPath(): string {
  // Under tsx the sources run as .ts; from the build, as .js.
  const self = fileURLToPath(import.meta.url);
  return self.replace(/run-demo\.(ts|js)$/, (_m, ext: string) => `worker.${ext}`);
}

const round = (n: number): number => Math.round(n * 10) / 10;

function printReport(r: DemoReport, c: ReturnType<typeof colours>): void {
  const verdict = r.ok ? c('green', 'PASS') : c('red', `FAIL: ${r.failures.join('; ')}`);
  const rows: Array<[string, string]> = [
    ['units sold', `${r.unitsSold} of ${r.stock} (stock left ${r.stockLeft})`],
    ['oversold', r.oversold === 0 ? c('green', '0') : c('red', String(r.oversold))],
    ['stale writes rejected', `${r.staleWritesRejected} (by fencing at the store)`],
    ['lock acquisitions', `${r.acquisitions} (${r.locksLost} lost to a freeze)`],
    ['acquire wait', `p50 ${r.acquireWaitMs.p50} ms, p99 ${r.acquireWaitMs.p99} ms`],
    ['handoff gap', `p50 ${r.handoffGapMs.p50} ms, p99 ${r.handoffGapMs.p99} ms`],
    ['node faults survived', String(r.nodeFaultsSurvived)],
    ['fences', r.fencesIncreasing ? 'strictly increasing' : c('red', 'NOT increasing')],
    ['wall time', `${(r.wallTimeMs / 1000).toFixed(1)} s`],
  ];
  process.stdout.write(
    `\n${c('bold', 'report')}\n${rows.map(([k, v]) => `  ${k.padEnd(22)} ${v}`).join('\n')}\n  ${'verdict'.padEnd(22)} ${verdict}\n`,
  );
}

interface Progress {
  sold: number;
  stock: number;
  seconds: number;
  holder: string;
}

/** A redrawn progress bar on a terminal; a plain line a second otherwise. Event lines print above the bar. */
function progressUi(out: NodeJS.WriteStream, quiet: boolean) {
  const tty = out.isTTY === true && !quiet;
  let last: Progress | undefined;
  let lastPlain = 0;
  let soldOutShown = false;
  let barShown = false;
  const render = (p: Progress): string => {
    const width = 30;
    const filled = Math.round((p.sold / p.stock) * width);
    const rate = p.seconds > 0 ? (p.sold / p.seconds).toFixed(0) : '0';
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.sold}/${p.stock} sold  ${rate}/s  holder: ${p.holder}`;
  };
  const clear = (): void => {
    if (tty && barShown) out.write('\r\x1b[2K');
    barShown = false;
  };
  return {
    line(text: string): void {
      clear();
      out.write(`${text}\n`);
      if (tty && last) {
        out.write(render(last));
        barShown = true;
      }
    },
    note(_text: string): void {
      // Worker retries during faults are expected; they show in the events, not as noise here.
    },
    progress(p: Progress): void {
      last = p;
      if (quiet) return;
      if (tty) {
        clear();
        out.write(render(p));
        barShown = true;
      } else if (p.seconds - lastPlain >= 1 || (p.sold === p.stock && !soldOutShown)) {
        lastPlain = p.seconds;
        soldOutShown = p.sold === p.stock;
        out.write(`${render(p)}\n`);
      }
    },
    done(): void {
      clear();
    },
  };
}
