// Layer 4: reconciliation. A job that compares the orders with the stock ledger and the stock, repairs what
// slipped through the layers above, and records each repair. It runs on a schedule in every worker process,
// but in one at a time (scheduleSingleton), in one transaction fenced by its own lock.
//
// The rules, in order:
//   1. one idempotency key, one placed order: later duplicates are cancelled;
//   2. each placed order has net -qty in the ledger, a cancelled one 0: a missing entry (a write cut off
//      half-way) or the unit a cancelled duplicate took is entered there;
//   3. the stock of each SKU equals its initial stock plus its ledger: drift (stock taken without its ledger
//      entry) is corrected.
// Orders and SKUs touched in the last `graceMs` are left for a later pass: without the unique layer's
// transaction, a write still under way looks like damage for a moment.
import { fencedTransaction, transaction, type SqlClient, type SqlPool } from '../../../pg/index.js';
import type { Tables } from './database.js';

export interface Repairs {
  /** duplicate orders cancelled */
  duplicatesCancelled: number;
  /** ledger entries written for orders whose ledger did not match */
  ledgerEntries: number;
  /** units of stock drift corrected (absolute, summed over SKUs) */
  stockDrift: number;
}

export const noRepairs = (): Repairs => ({ duplicatesCancelled: 0, ledgerEntries: 0, stockDrift: 0 });

export function addRepairs(into: Repairs, more: Repairs): void {
  into.duplicatesCancelled += more.duplicatesCancelled;
  into.ledgerEntries += more.ledgerEntries;
  into.stockDrift += more.stockDrift;
}

/** One pass; `lock` fences it (a reconciler paused past its lease cannot commit over a newer one). */
export function reconcile(
  pool: SqlPool,
  t: Tables,
  graceMs: number,
  lock?: { resources: readonly string[]; fence: bigint },
): Promise<Repairs> {
  const pass = (db: SqlClient): Promise<Repairs> => reconcileIn(db, t, graceMs);
  return lock ? fencedTransaction(pool, lock, pass, { table: t.fences }) : transaction(pool, pass);
}

async function reconcileIn(db: SqlClient, t: Tables, graceMs: number): Promise<Repairs> {
  const repairs = noRepairs();
  const settled = `now() - ($1::int * interval '1 millisecond')`;
  // The stock rows first: no order can take stock while the pass compares and corrects it (an order
  // committing between the drift query and its correction would be overwritten).
  await db.query(`SELECT sku FROM ${t.stock} ORDER BY sku FOR UPDATE`);
  const log = (kind: string, detail: string) => db.query(`INSERT INTO ${t.log} (kind, detail) VALUES ($1, $2)`, [kind, detail]);

  const duplicates = await db.query(
    `SELECT idempotency_key AS key, (array_agg(id ORDER BY id))[2:] AS extra
       FROM ${t.orders} WHERE status = 'placed'
      GROUP BY idempotency_key
     HAVING count(*) > 1 AND max(created_at) < ${settled}`,
    [graceMs],
  );
  for (const row of duplicates.rows as Array<{ key: string; extra: string[] }>) {
    await db.query(`UPDATE ${t.orders} SET status = 'cancelled' WHERE id = ANY($1::bigint[])`, [row.extra]);
    repairs.duplicatesCancelled += row.extra.length;
    await log('duplicate', `${row.key}: orders ${row.extra.join(', ')} cancelled (a later order for the same key)`);
  }

  const unbalanced = await db.query(
    `SELECT o.id, o.sku, o.idempotency_key AS key,
            (CASE WHEN o.status = 'placed' THEN -o.qty ELSE 0 END) - COALESCE(sum(l.delta), 0) AS missing
       FROM ${t.orders} o LEFT JOIN ${t.ledger} l ON l.order_id = o.id
      WHERE o.created_at < ${settled}
      GROUP BY o.id
     HAVING COALESCE(sum(l.delta), 0) <> (CASE WHEN o.status = 'placed' THEN -o.qty ELSE 0 END)`,
    [graceMs],
  );
  for (const row of unbalanced.rows as Array<{ id: string; sku: string; key: string; missing: string }>) {
    const missing = Number(row.missing);
    await db.query(`INSERT INTO ${t.ledger} (order_id, sku, delta, reason) VALUES ($1, $2, $3, 'reconciliation')`, [
      row.id,
      row.sku,
      missing,
    ]);
    repairs.ledgerEntries++;
    await log('ledger', `order ${row.id} (${row.key}): ledger ${missing > 0 ? '+' : ''}${missing} ${row.sku}`);
  }

  const drift = await db.query(
    `SELECT s.sku, s.qty, s.initial + COALESCE((SELECT sum(delta) FROM ${t.ledger} l WHERE l.sku = s.sku), 0) AS expected
       FROM ${t.stock} s
      WHERE NOT EXISTS (SELECT 1 FROM ${t.ledger} l WHERE l.sku = s.sku AND l.reason = 'order' AND l.at >= ${settled})
        AND NOT EXISTS (SELECT 1 FROM ${t.orders} o WHERE o.sku = s.sku AND o.created_at >= ${settled})`,
    [graceMs],
  );
  for (const row of drift.rows as Array<{ sku: string; qty: number; expected: string }>) {
    const expected = Number(row.expected);
    if (row.qty === expected) continue;
    await db.query(`UPDATE ${t.stock} SET qty = $2 WHERE sku = $1`, [row.sku, expected]);
    repairs.stockDrift += Math.abs(expected - row.qty);
    await log('stock', `${row.sku}: stock ${row.qty} corrected to ${expected} (initial + ledger)`);
  }
  return repairs;
}
