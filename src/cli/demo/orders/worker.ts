// One worker process of the orders scenario: takes order requests from the parent one at a time and places
// each under the layers that are on; runs the reconciliation job on a schedule, one process at a time.
import pg from 'pg';
import { LockLostError, type Lock, type LockManager } from '../../../index.js';
import { lockManager } from '../../lock-store.js';
import { scheduleSingleton, type SingletonJob } from '../../../singleton.js';
import { statements, tables, type Db } from './database.js';
import { alreadyPlaced, writeOrder, type Outcome } from './orders.js';
import type { Delivery } from './plan.js';
import type { OrdersParentMessage, OrdersWorkerConfig, OrdersWorkerMessage } from './protocol.js';
import { reconcile } from './reconcile.js';

/** `--break lock`: a lease this short, never extended, ends long before the work (BROKEN_WORK_MS) does. */
const BROKEN_TTL = 60;
const BROKEN_WORK_MS = 150;

const send = (m: OrdersWorkerMessage): void => {
  process.send?.(m);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let worker: Worker | undefined;
let freezeNext = false;
let killNext = false;
let spare: (() => void) | undefined;
process.on('message', (m: OrdersParentMessage) => {
  if (m.type === 'start') worker = new Worker(m.config);
  if (m.type === 'deliver') void worker?.handle(m.delivery);
  if (m.type === 'freeze-next') freezeNext = true;
  if (m.type === 'kill-next') killNext = true;
  if (m.type === 'spare') spare?.();
  if (m.type === 'stop') void worker?.stop();
});
// The parent is gone (Ctrl-C, crash): do not linger.
process.on('disconnect', () => process.exit(0));

class Worker {
  private readonly pool: Db;
  private readonly locks: LockManager;
  private readonly t;
  private readonly reconciler: SingletonJob | undefined;
  private readonly end: () => Promise<void>;
  /** the order lock the current delivery waits for, and whether it had to wait behind another holder */
  private current = '';
  private heldBack = false;
  /**
   * The reconciliation pass under way in this process, and whether passes are held back: a process frozen in
   * the middle of the pass's transaction would hold every other worker's statements with it (the embedded
   * database runs one transaction at a time), so nobody could place the frozen worker's order before it wakes.
   */
  private reconciling: Promise<unknown> | undefined;
  private reconcileHeld = false;

  constructor(private readonly c: OrdersWorkerConfig) {
    this.t = tables(c.schema);
    const pool = new pg.Pool({ connectionString: c.databaseUrl, max: 3 });
    pool.on('error', () => undefined); // a connection dropped while idle: the next query reconnects
    this.pool = statements(pool, c.embeddedDatabase);
    this.end = () => pool.end();
    // Redis nodes only (etcd and ZooKeeper refuse it): a broken lock's 60 ms lease needs a node timeout under a third of it.
    const nodeTimeout = c.brokenLock ? 15 : 100;
    this.locks = lockManager(c.lockUrls, { ttl: c.ttl, acquireTimeout: 60_000 }, { nodeTimeout });
    this.locks.on('retry', (e) => {
      if (e.resources[0] === this.current) this.heldBack = true;
    });
    this.reconciler =
      c.reconcileEvery > 0
        ? scheduleSingleton(
            this.locks,
            'reconcile:orders',
            async (lock) => {
              if (this.reconcileHeld) return;
              const pass = reconcile(this.pool, this.t, c.graceMs, lock);
              this.reconciling = pass.catch(() => undefined);
              try {
                send({ type: 'reconciled', worker: c.id, repairs: await pass });
              } finally {
                this.reconciling = undefined;
              }
            },
            { every: c.reconcileEvery, immediately: false, onError: () => undefined },
          )
        : undefined;
    send({ type: 'ready', worker: c.id });
  }

  async handle(d: Delivery): Promise<void> {
    const { c } = this;
    this.current = `order:${d.key}`;
    this.heldBack = false;
    let outcome: Outcome | undefined;
    const critical = async (lock?: Lock): Promise<void> => {
      // Layer 2: the business state, read under the lock.
      if (c.layers.includes('state') && (await alreadyPlaced(this.pool, this.t, d.key))) {
        outcome = 'state';
        return;
      }
      if (freezeNext) {
        // Ask to be frozen right here, holding the lock, after the check and before the write: a GC pause. Not
        // in the middle of this process's reconciliation transaction (see reconciling), nor with one starting.
        freezeNext = false;
        this.reconcileHeld = true;
        await this.reconciling;
        send({ type: 'freeze-me', worker: c.id, delivery: d });
        await sleep(100);
        this.reconcileHeld = false;
      }
      await sleep(c.brokenLock ? BROKEN_WORK_MS : c.workMs);
      // No look at lock.signal on purpose: the write goes out even if the lease ran out meanwhile, as a
      // paused process's write would. The fence (and the layers below) must stop it.
      outcome = await writeOrder(this.pool, this.t, d, {
        layers: c.layers,
        ...(lock ? { lock } : {}),
        worker: c.id,
        midWrite: async () => {
          if (!killNext) return;
          killNext = false;
          send({ type: 'kill-me', worker: c.id, delivery: d });
          // The parent kills this process meanwhile, or spares this write (and the kill waits for the next).
          await new Promise<void>((resolve) => {
            spare = resolve;
            setTimeout(resolve, 10_000).unref();
          });
          spare = undefined;
          killNext = true;
        },
      });
    };
    let leaseLost = false;
    try {
      if (c.layers.includes('lock')) {
        await this.locks.withLock(this.current, critical, c.brokenLock ? { ttl: BROKEN_TTL, autoExtend: false } : {});
      } else {
        await critical();
      }
    } catch (error) {
      if (!(error instanceof LockLostError) || outcome === undefined) {
        // No quorum while lock nodes are down, a database error: the request goes back to the queue.
        send({ type: 'retry', worker: c.id, delivery: d, message: (error as Error).message });
        send({ type: 'ready', worker: c.id });
        return;
      }
      leaseLost = true;
    }
    send({ type: 'result', worker: c.id, delivery: d, outcome: outcome!, heldBack: this.heldBack, leaseLost });
    send({ type: 'ready', worker: c.id });
  }

  async stop(): Promise<void> {
    await this.reconciler?.stop();
    if (this.reconciler) {
      const { ran, skipped, failed } = this.reconciler;
      send({ type: 'reconcile-stats', worker: this.c.id, ran, skipped, failed });
    }
    await this.locks.close();
    await this.end();
    process.disconnect?.();
  }
}
