// Placing orders without duplicates, in four layers, each covering what the one before can miss:
//   1. a lock per idempotency key, its fence checked by the database (a holder whose lease ran out while it
//      was paused cannot write after a newer holder);
//   2. a state check under that lock: a redelivery finds the order already there;
//   3. the UNIQUE idempotency key, with the order, its stock and its ledger entry written in one transaction:
//      a duplicate that gets past 1 and 2 inserts nothing;
//   4. a reconciliation job, in one process at a time, that repairs what slipped through anyway (a bug, a
//      manual edit) and records each repair.
// The tables are in schema.sql; the SQL names them unqualified (set search_path to their schema).
import type { Pool } from 'pg';
import { scheduleSingleton, type Lock, type LockManager, type SingletonJob } from '../../src/index.js';
import { fencedTransaction, type FencedLock, type SqlClient, type SqlPool } from '../../src/pg/index.js';

/** One order as it arrives (a request, a message): `key` is its idempotency key, the same on every redelivery. */
export interface OrderRequest {
  readonly key: string;
  readonly sku: string;
  readonly qty: number;
}

export type Placed = 'created' | 'duplicate' | 'sold-out';

/** Places `order` once, however many times and wherever it is delivered. */
export function placeOrder(locks: LockManager, pool: Pool, order: OrderRequest): Promise<Placed> {
  // Layer 1: deliveries of the same order take turns (withLock keeps the lease extended while they work).
  return locks.withLock(`order:${order.key}`, async (lock) => {
    // Layer 2: the turn after the first finds the work done, and does not open a transaction for nothing.
    const done = await pool.query('SELECT 1 FROM orders WHERE idempotency_key = $1', [order.key]);
    if (done.rowCount) return 'duplicate';
    return writeOrder(pool, lock, order);
  });
}

class SoldOut extends Error {}

/**
 * The write itself, under `lock`: rejects with StaleFenceError, having written nothing, when a holder with a
 * newer fence for this order has written already.
 */
export async function writeOrder(pool: SqlPool, lock: FencedLock, order: OrderRequest): Promise<Placed> {
  try {
    return await fencedTransaction(pool, lock, async (db) => {
      // Layer 3: a second insert for the key returns no row; nothing more is written for it.
      const inserted = await db.query(
        `INSERT INTO orders (idempotency_key, sku, qty, fence) VALUES ($1, $2, $3, $4)
         ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
        [order.key, order.sku, order.qty, lock.fence.toString()],
      );
      if (inserted.rowCount === 0) return 'duplicate';
      // The stock guard is part of the update: two orders for the last unit cannot both see it free.
      const taken = await db.query('UPDATE stock SET qty = qty - $2 WHERE sku = $1 AND qty >= $2', [order.sku, order.qty]);
      // Throwing rolls the order back with it: a sold-out order leaves no row behind.
      if (taken.rowCount === 0) throw new SoldOut();
      await db.query(`INSERT INTO stock_ledger (order_id, sku, delta, reason) VALUES ($1, $2, $3, 'order')`, [
        inserted.rows[0]!.id,
        order.sku,
        -order.qty,
      ]);
      return 'created';
    });
  } catch (error) {
    if (error instanceof SoldOut) return 'sold-out';
    throw error;
  }
}

/** What one reconciliation pass repaired. */
export interface Repairs {
  duplicatesCancelled: number;
  ledgerEntries: number;
  /** units of stock corrected, summed over SKUs */
  stockDrift: number;
}

/**
 * Layer 4, one pass, in one transaction fenced by the reconciler's lock (a pass paused past its lease cannot
 * commit over a newer one). The rules, in order, each one's repairs feeding the next:
 *   1. one idempotency key, one placed order: later ones are cancelled;
 *   2. a placed order has -qty in the ledger, a cancelled one 0: a difference is entered there;
 *   3. stock = initial + ledger: drift is corrected (to a negative value it cannot be: the pass then fails
 *      on the CHECK and changes nothing, for a person to look at).
 */
export function reconcile(pool: SqlPool, lock: FencedLock): Promise<Repairs> {
  return fencedTransaction(pool, lock, async (db: SqlClient) => {
    const repairs: Repairs = { duplicatesCancelled: 0, ledgerEntries: 0, stockDrift: 0 };
    const log = (kind: string, detail: string) => db.query('INSERT INTO reconciliation_log (kind, detail) VALUES ($1, $2)', [kind, detail]);

    // Hold the stock rows first. An order changes its stock and its ledger in one transaction, and now none can
    // commit until this pass ends, so every statement below sees the same orders, ledger and stock.
    await db.query('SELECT sku FROM stock ORDER BY sku FOR UPDATE');

    // Rule 1 finds nothing while the UNIQUE constraint is there; it covers rows from before it, or a table without it.
    const duplicates = await db.query(
      `SELECT idempotency_key AS key, (array_agg(id ORDER BY id))[2:] AS extra
         FROM orders WHERE status = 'placed' GROUP BY idempotency_key HAVING count(*) > 1`,
    );
    for (const row of duplicates.rows as Array<{ key: string; extra: string[] }>) {
      await db.query(`UPDATE orders SET status = 'cancelled' WHERE id = ANY($1::bigint[])`, [row.extra]);
      repairs.duplicatesCancelled += row.extra.length;
      await log('duplicate', `${row.key}: orders ${row.extra.join(', ')} cancelled (the first order for the key stands)`);
    }

    const unbalanced = await db.query(
      `SELECT o.id, o.sku, o.idempotency_key AS key,
              (CASE WHEN o.status = 'placed' THEN -o.qty ELSE 0 END) - COALESCE(sum(l.delta), 0) AS missing
         FROM orders o LEFT JOIN stock_ledger l ON l.order_id = o.id
        GROUP BY o.id
       HAVING COALESCE(sum(l.delta), 0) <> (CASE WHEN o.status = 'placed' THEN -o.qty ELSE 0 END)`,
    );
    for (const row of unbalanced.rows as Array<{ id: string; sku: string; key: string; missing: string }>) {
      await db.query(`INSERT INTO stock_ledger (order_id, sku, delta, reason) VALUES ($1, $2, $3, 'reconciliation')`, [
        row.id,
        row.sku,
        row.missing,
      ]);
      repairs.ledgerEntries++;
      await log('ledger', `order ${row.id} (${row.key}): ledger ${Number(row.missing) > 0 ? '+' : ''}${row.missing} ${row.sku}`);
    }

    const drifted = await db.query(
      `SELECT s.sku, s.qty, s.initial + COALESCE(sum(l.delta), 0) AS expected
         FROM stock s LEFT JOIN stock_ledger l ON l.sku = s.sku
        GROUP BY s.sku
       HAVING s.qty <> s.initial + COALESCE(sum(l.delta), 0)`,
    );
    for (const row of drifted.rows as Array<{ sku: string; qty: number; expected: string }>) {
      await db.query('UPDATE stock SET qty = $2 WHERE sku = $1', [row.sku, row.expected]);
      repairs.stockDrift += Math.abs(Number(row.expected) - row.qty);
      await log('stock', `${row.sku}: stock ${row.qty} corrected to ${row.expected} (initial + ledger)`);
    }
    return repairs;
  });
}

/** One finished pass: its repairs, and when it held the lock (performance.now() ms). */
export interface ReconcilePass {
  repairs: Repairs;
  started: number;
  ended: number;
}

export interface ReconcilerOptions {
  /** run the first pass at once (default true) */
  immediately?: boolean;
  /** called after each pass this process ran (to log or count its repairs) */
  onPass?: (pass: ReconcilePass) => void;
  /** called when a pass fails (default: console.error); the schedule goes on */
  onError?: (error: unknown) => void;
}

/**
 * Runs {@link reconcile} every `every` ms. Start it in every process of the service: each tick, the process
 * that gets the lock runs the pass and the others skip it, so passes never overlap and a pass still runs when
 * some process is down.
 */
export function startReconciler(locks: LockManager, pool: SqlPool, every: number, o: ReconcilerOptions = {}): SingletonJob {
  const pass = async (lock: Lock): Promise<void> => {
    const started = performance.now();
    const repairs = await reconcile(pool, lock);
    o.onPass?.({ repairs, started, ended: performance.now() });
  };
  return scheduleSingleton(locks, 'orders:reconcile', pass, {
    every,
    immediately: o.immediately,
    onError: o.onError ?? ((error) => console.error('orders reconciliation failed:', error)),
  });
}
