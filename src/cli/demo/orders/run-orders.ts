// The orders scenario: order requests, some delivered more than once, placed by worker processes under up
// to four layers of protection (lock with fencing, state check, unique key, reconciliation), with faults
// injected; the report says what each layer stopped, and the verdict whether any order exists twice, any
// unit was oversold, or the ledger fails to reconcile.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startRedisNodes, type LocalRedisNodes } from '../../../testing/index.js';
import { lockManager } from '../../lock-store.js';
import { CliError, colours, toJson } from '../../output.js';
import { unreachable } from '../../reach.js';
import { Chaos, seededRandom, type ChaosFault, type ChaosTargets } from '../chaos.js';
import { minTtl, startCluster, type DemoBackend, type LocalCluster } from '../clusters.js';
import { createSchema, dropSchema, loadPg, openDatabase, tables } from './database.js';
import type { Outcome } from './orders.js';
import { plannedDeliveries, SKUS, type Breakable, type Delivery, type Fault, type Layer } from './plan.js';
import type { OrdersParentMessage, OrdersWorkerMessage } from './protocol.js';
import { addRepairs, noRepairs, reconcile, type Repairs } from './reconcile.js';
import { verify, type Verdict } from './verify.js';

export interface OrdersOptions {
  nodes?: string[];
  backend?: DemoBackend;
  databaseUrl?: string;
  workers: number;
  orders: number;
  ttl: number;
  seed: number;
  layers: Layer[];
  faults: Fault[];
  breaks: Breakable[];
  json: boolean;
}

export interface OrdersReport extends Verdict {
  readonly scenario: 'orders';
  readonly layers: readonly Layer[];
  readonly broken: readonly Breakable[];
  readonly requests: number;
  readonly deliveries: number;
  /** deliveries beyond the first of each key: planned duplicates, plus redeliveries after a freeze or a kill */
  readonly duplicatesDelivered: number;
  readonly stopped: {
    /** deliveries that waited for the order's lock while another delivery of the same order held it */
    readonly lockHeldBack: number;
    /** writes turned away by the fence: a newer holder of the order's lock had written */
    readonly fence: number;
    readonly stateCheck: number;
    readonly uniqueKey: number;
  };
  readonly reconciliation: Repairs & { readonly runs: number; readonly skipped: number };
  readonly leasesLost: number;
  readonly faults: readonly string[];
  readonly database: string;
  readonly wallTimeMs: number;
}

/** Ticks of the reconciliation job in the workers, and how settled a write must be before it is judged. */
const RECONCILE_EVERY_MS = 1_000;
const GRACE_MS = 1_000;

export async function runOrders(o: OrdersOptions): Promise<OrdersReport> {
  // etcd's leases last at least 2 s, ZooKeeper's sessions 400 ms: the freeze must outlast the lease the server really keeps.
  if (o.ttl < minTtl(o.backend)) o = { ...o, ttl: minTtl(o.backend) };
  const out = process.stdout;
  const c = colours(out);
  const log = (line: string): void => {
    if (!o.json) out.write(`${line}\n`);
  };
  const pg = await loadPg();
  if (o.nodes) {
    const down = await unreachable(o.nodes);
    if (down.length > 0) throw new CliError(`cannot reach ${down.map((d) => `${d.url} (${d.reason})`).join(', ')}`, 1);
  }
  const database = await openDatabase(o.databaseUrl);
  const workers: ChildProcess[] = [];
  let local: LocalRedisNodes | undefined;
  let cluster: LocalCluster | undefined;
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => undefined);
  const t = tables(`fencelock_orders_${randomBytes(4).toString('hex')}`);
  let schemaMade = false;
  try {
    cluster = await startCluster(o.backend);
    if (!cluster && !o.nodes) local = await startRedisNodes(5);
    const lockUrls = cluster ? [cluster.url] : (o.nodes ?? local!.urls);
    const deliveries = plannedDeliveries(o.orders, o.seed);
    const demand = Object.fromEntries(SKUS.map((sku) => [sku, 0]));
    for (const d of deliveries) if (d.copy === 0) demand[d.sku]! += d.qty;
    // Stock enough for every order three times over: a duplicate takes units, but never sells an SKU out.
    const stock = Object.fromEntries(SKUS.map((sku) => [sku, demand[sku]! * 3]));
    await createSchema(pool, t, o.layers, stock);
    schemaMade = true;

    log(
      c('bold', 'fencelock demo: orders') + ` - ${o.orders} order requests, ${deliveries.length} deliveries, ${o.workers} worker processes`,
    );
    log(
      `layers: ${o.layers.length > 0 ? o.layers.join(', ') : 'none'}${o.breaks.includes('lock') ? c('red', ' (lock broken: its lease ends long before the work)') : ''}`,
    );
    log(`lock store: ${cluster ? `${cluster.description}: ${cluster.url}` : `${lockUrls.length} Redis nodes: ${lockUrls.join(' ')}`}`);
    log(`database: ${database.label}, schema ${t.schema}`);
    log(o.faults.length > 0 ? `faults: ${o.faults.join(', ')} (seed ${o.seed})` : 'faults: none');

    const started = performance.now();
    const events: string[] = [];
    const announce = (text: string): void => {
      const stamp = ((performance.now() - started) / 1000).toFixed(1).padStart(5);
      events.push(`${stamp}s ${text}`);
      log(`${c('dim', `${stamp}s`)} ${c('yellow', '!')} ${text}`);
    };

    const dispatch = new Dispatcher(deliveries, workers, (m) => announce(m));
    const counts: Record<Outcome, number> = { created: 0, state: 0, unique: 0, fence: 0, 'sold-out': 0 };
    let heldBack = 0;
    let leasesLost = 0;
    const repairs = noRepairs();
    const reconcileRuns = { ran: 0, skipped: 0 };
    const freezeWaiters = new Map<number, (frozen: { pid: number; key: string }) => void>();
    /**
     * orders a frozen worker holds, and what wakes it: another worker has finished the order's redelivery (a
     * kill of that redelivery would leave the fence nothing to reject, so the kill spares it)
     */
    const frozenKeys = new Map<string, () => void>();
    const random = seededRandom(o.seed + 7);

    const chaosFaults = new Set<ChaosFault>();
    if (o.faults.includes('kill-node')) chaosFaults.add('kill');
    if (o.faults.includes('freeze-worker')) chaosFaults.add('freeze');
    const chaos = new Chaos(
      chaosTargets(cluster, local),
      o.breaks.includes('lock') ? 1_000 : o.ttl,
      seededRandom(o.seed),
      {
        announce,
        freezeWorker: () => {
          const target = dispatch.busyWorker(random);
          if (target === undefined) return Promise.resolve(undefined);
          return new Promise((resolve) => {
            freezeWaiters.set(target, ({ pid, key }) => {
              const thaw = new Promise<void>((done) => frozenKeys.set(key, done));
              resolve({ id: target, pid, thaw });
            });
            workers[target]!.send({ type: 'freeze-next' } satisfies OrdersParentMessage);
            // It freezes at its next write: if none comes (every delivery left was a duplicate), no freeze.
            setTimeout(() => freezeWaiters.delete(target) && resolve(undefined), 5_000).unref();
          });
        },
      },
      chaosFaults,
    );
    let killRequested = false;
    const progress = (): void => {
      const fraction = dispatch.completed / deliveries.length;
      chaos.progress(fraction);
      if (o.faults.includes('kill-worker') && fraction >= 3 / 4 && !killRequested) {
        const target = dispatch.busyWorker(random);
        // No worker busy at this moment (each between two deliveries): ask again at the next completion.
        if (target !== undefined) {
          killRequested = true;
          workers[target]!.send({ type: 'kill-next' } satisfies OrdersParentMessage);
        }
      }
    };

    const finished = Array.from({ length: o.workers }, (_, id) => {
      const worker = fork(workerPath(), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(worker);
      return new Promise<void>((resolve) => {
        worker.on('message', (m: OrdersWorkerMessage) => {
          switch (m.type) {
            case 'ready':
              dispatch.ready(m.worker);
              break;
            case 'result':
              counts[m.outcome]++;
              if (m.outcome !== 'fence') {
                frozenKeys.get(m.delivery.key)?.();
                frozenKeys.delete(m.delivery.key);
              }
              if (m.heldBack) heldBack++;
              if (m.leaseLost) leasesLost++;
              if (m.outcome === 'fence') announce(`worker ${m.worker}: its late write for ${m.delivery.key} turned away by the fence`);
              dispatch.done(m.worker);
              progress();
              break;
            case 'retry':
              dispatch.redeliver(m.worker, m.delivery, undefined);
              break;
            case 'freeze-me':
              freezeWaiters.get(m.worker)?.({ pid: worker.pid as number, key: m.delivery.key });
              freezeWaiters.delete(m.worker);
              // The client whose request is stuck in the frozen worker times out and sends it again.
              dispatch.redeliver(m.worker, m.delivery, `${m.delivery.key} delivered again (its client timed out)`, true);
              break;
            case 'kill-me':
              if (frozenKeys.has(m.delivery.key)) {
                worker.send({ type: 'spare' } satisfies OrdersParentMessage);
                break;
              }
              worker.kill('SIGKILL');
              announce(`worker ${m.worker} killed (SIGKILL) in the middle of writing ${m.delivery.key}`);
              dispatch.redeliver(m.worker, m.delivery, `${m.delivery.key} delivered again (no answer from worker ${m.worker})`);
              break;
            case 'reconciled':
              addRepairs(repairs, m.repairs);
              if (m.repairs.duplicatesCancelled + m.repairs.ledgerEntries + m.repairs.stockDrift > 0) {
                announce(`reconciliation (worker ${m.worker}): ${describeRepairs(m.repairs)}`);
              }
              break;
            case 'reconcile-stats':
              reconcileRuns.ran += m.ran;
              reconcileRuns.skipped += m.skipped;
              break;
          }
        });
        worker.on('exit', () => {
          dispatch.gone(id);
          resolve();
        });
        worker.send({
          type: 'start',
          config: {
            id,
            lockUrls,
            databaseUrl: database.url,
            embeddedDatabase: database.embedded,
            schema: t.schema,
            layers: o.layers,
            brokenLock: o.breaks.includes('lock'),
            ttl: o.ttl,
            workMs: 5,
            reconcileEvery: o.layers.includes('reconcile') ? RECONCILE_EVERY_MS : 0,
            graceMs: GRACE_MS,
          },
        } satisfies OrdersParentMessage);
      });
    });
    await dispatch.drained;
    await chaos.settle();
    await dispatch.drainedAgain();
    for (const w of workers) if (w.connected) w.send({ type: 'stop' } satisfies OrdersParentMessage);
    await Promise.all(finished);

    if (o.layers.includes('reconcile')) {
      // The last pass, once every worker has stopped: nothing is in flight, so nothing needs a grace period.
      const locks = lockManager(lockUrls, {}, { nodeTimeout: 100 });
      try {
        const last = await locks.withLock('reconcile:orders', (lock) => reconcile(pool, t, 0, lock));
        reconcileRuns.ran++;
        addRepairs(repairs, last);
        if (last.duplicatesCancelled + last.ledgerEntries + last.stockDrift > 0)
          announce(`reconciliation (final pass): ${describeRepairs(last)}`);
      } finally {
        await locks.close();
      }
    }

    const verdict = await verify(pool, t, deliveries, stock, counts['sold-out']);
    const report: OrdersReport = {
      scenario: 'orders',
      layers: o.layers,
      broken: o.breaks,
      requests: o.orders,
      deliveries: dispatch.sent,
      duplicatesDelivered: dispatch.sent - o.orders,
      stopped: { lockHeldBack: heldBack, fence: counts.fence, stateCheck: counts.state, uniqueKey: counts.unique },
      reconciliation: { ...repairs, runs: reconcileRuns.ran, skipped: reconcileRuns.skipped },
      leasesLost,
      faults: events,
      database: database.label,
      wallTimeMs: Math.round(performance.now() - started),
      ...verdict,
    };
    if (o.json) out.write(toJson(report) + '\n');
    else printReport(report, c);
    return report;
  } finally {
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    if (schemaMade) await dropSchema(pool, t).catch(() => undefined);
    await pool.end().catch(() => undefined);
    await database.close();
    await cluster?.stop();
    await local?.stop();
  }
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
const describeRepairs = (r: Repairs): string =>
  `${plural(r.duplicatesCancelled, 'duplicate order', 'duplicate orders')} cancelled, ${plural(r.ledgerEntries, 'ledger entry', 'ledger entries')} written, ${plural(r.stockDrift, 'unit', 'units')} of stock put right`;

/**
 * Hands deliveries to idle workers, one at a time each, and delivers again what a frozen, killed or failing
 * worker did not finish. Resolves `drained` once nothing is queued or in flight.
 */
class Dispatcher {
  sent = 0;
  completed = 0;
  private readonly queue: Delivery[];
  private readonly inFlight = new Map<number, Delivery>();
  private readonly idle: number[] = [];
  private readonly alive = new Set<number>();
  private resolveDrained!: () => void;
  drained: Promise<void>;

  constructor(
    deliveries: readonly Delivery[],
    private readonly workers: readonly ChildProcess[],
    private readonly announce: (text: string) => void,
  ) {
    this.queue = [...deliveries];
    this.drained = new Promise((r) => (this.resolveDrained = r));
  }

  /** After the faults settled, deliveries they put back may still be in flight. */
  drainedAgain(): Promise<void> {
    this.drained = new Promise((r) => (this.resolveDrained = r));
    this.check();
    return this.drained;
  }

  ready(worker: number): void {
    this.alive.add(worker);
    this.inFlight.delete(worker);
    this.idle.push(worker);
    this.pump();
  }

  done(worker: number): void {
    this.completed++;
    this.inFlight.delete(worker);
  }

  gone(worker: number): void {
    this.alive.delete(worker);
    this.inFlight.delete(worker);
    const i = this.idle.indexOf(worker);
    if (i >= 0) this.idle.splice(i, 1);
    this.check();
  }

  /** `delivery` goes back to the front of the queue (a frozen worker keeps it too: it may still finish). */
  redeliver(worker: number, delivery: Delivery, why: string | undefined, keep = false): void {
    if (!keep) this.inFlight.delete(worker);
    if (why) this.announce(why);
    this.queue.unshift(delivery);
    this.pump();
  }

  /** A worker with a delivery in flight (for a fault to strike), or undefined. */
  busyWorker(random: () => number): number | undefined {
    const busy = [...this.inFlight.keys()].filter((w) => this.alive.has(w));
    return busy[Math.floor(random() * busy.length)];
  }

  private pump(): void {
    while (this.queue.length > 0 && this.idle.length > 0) {
      const worker = this.idle.shift()!;
      const delivery = this.queue.shift()!;
      this.inFlight.set(worker, delivery);
      this.sent++;
      this.workers[worker]!.send({ type: 'deliver', delivery } satisfies OrdersParentMessage);
    }
    this.check();
  }

  private check(): void {
    if (this.queue.length === 0 && this.inFlight.size === 0) this.resolveDrained();
    else if (this.alive.size === 0 && this.sent > 0) this.resolveDrained(); // every worker gone: nothing more can happen
  }
}

function chaosTargets(cluster: LocalCluster | undefined, local: LocalRedisNodes | undefined): ChaosTargets | undefined {
  if (cluster) return cluster.chaos;
  if (!local) return undefined;
  return { nodes: local.nodes, label: (i) => `lock node ${i + 1} (${local.nodes[i]?.port})`, restarted: 'empty (restart quarantine)' };
}

function workerPath(): string {
  const self = fileURLToPath(import.meta.url);
  return self.replace(/run-orders\.(ts|js)$/, (_m, ext: string) => `worker.${ext}`);
}

function printReport(r: OrdersReport, c: ReturnType<typeof colours>): void {
  const off = (layer: Layer, text: string): string => (r.layers.includes(layer) ? text : c('dim', 'off'));
  const bad = (x: number): string => (x === 0 ? c('green', '0') : c('red', String(x)));
  const rows: Array<[string, string]> = [
    ['order requests', `${r.requests} (${r.deliveries} deliveries: ${r.duplicatesDelivered} duplicates)`],
    [
      'orders placed',
      `${r.ordersPlaced} of ${r.requests}${r.duplicateOrdersCreated > 0 ? `, plus ${r.duplicateOrdersCreated} duplicate orders created` : ''}`,
    ],
    [
      'layer 1: lock + fence',
      off(
        'lock',
        `${plural(r.stopped.lockHeldBack, 'delivery', 'deliveries')} held back while the same order was being placed; ${plural(r.stopped.fence, 'late write', 'late writes')} turned away by the fence`,
      ),
    ],
    ['layer 2: state check', off('state', `${plural(r.stopped.stateCheck, 'duplicate', 'duplicates')} found already placed`)],
    ['layer 3: unique key', off('unique', `${plural(r.stopped.uniqueKey, 'duplicate insert', 'duplicate inserts')} turned into no-ops`)],
    [
      'layer 4: reconciliation',
      off(
        'reconcile',
        `${plural(r.reconciliation.runs, 'run', 'runs')} (${plural(r.reconciliation.skipped, 'tick', 'ticks')} skipped: another process had it); ${describeRepairs(r.reconciliation)}`,
      ),
    ],
    ['duplicate orders left', bad(r.duplicateOrdersLeft)],
    ['oversold units', bad(r.oversoldUnits)],
    ['ledger', r.ledgerReconciles ? 'reconciles with stock and orders' : c('red', 'does NOT reconcile')],
    ['leases lost', String(r.leasesLost)],
    ['wall time', `${(r.wallTimeMs / 1000).toFixed(1)} s`],
  ];
  const verdict = r.ok ? c('green', 'PASS') : c('red', `FAIL: ${r.failures.join('; ')}`);
  process.stdout.write(
    `\n${c('bold', 'report')}\n${rows.map(([k, v]) => `  ${k.padEnd(24)} ${v}`).join('\n')}\n  ${'verdict'.padEnd(24)} ${verdict}\n`,
  );
}
