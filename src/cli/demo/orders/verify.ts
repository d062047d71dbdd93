// The verdict of the orders scenario, from the database alone: every request placed exactly once, no unit
// taken beyond the placed orders, and the ledger in agreement with the stock and the orders.
import type { Pool } from 'pg';
import type { Tables } from './database.js';
import type { Delivery } from './plan.js';

export interface Verdict {
  /** requests with exactly one placed order */
  readonly ordersPlaced: number;
  /** order rows beyond the first for their key, cancelled since or not */
  readonly duplicateOrdersCreated: number;
  /** keys with more than one placed order at the end */
  readonly duplicateOrdersLeft: number;
  /** units taken from stock beyond what the placed orders (one per key) account for */
  readonly oversoldUnits: number;
  readonly ledgerReconciles: boolean;
  readonly ok: boolean;
  readonly failures: readonly string[];
}

export async function verify(
  pool: Pool,
  t: Tables,
  deliveries: readonly Delivery[],
  initial: Record<string, number>,
  soldOut: number,
): Promise<Verdict> {
  const demand = new Map<string, number>();
  for (const d of deliveries) if (d.copy === 0) demand.set(d.sku, (demand.get(d.sku) ?? 0) + d.qty);
  const requests = new Set(deliveries.map((d) => d.key)).size;

  const orders = await pool.query<{ placed: string; keys: string; rows: string; left: string }>(
    `SELECT count(DISTINCT idempotency_key) FILTER (WHERE status = 'placed') AS placed,
            count(DISTINCT idempotency_key) AS keys, count(*) AS rows,
            (SELECT count(*) FROM (SELECT 1 FROM ${t.orders} WHERE status = 'placed' GROUP BY idempotency_key HAVING count(*) > 1) d) AS left
       FROM ${t.orders}`,
  );
  const { placed, keys, rows, left } = orders.rows[0]!;
  const stock = await pool.query<{ sku: string; qty: number; ledger: string }>(
    `SELECT s.sku, s.qty, COALESCE((SELECT sum(delta) FROM ${t.ledger} l WHERE l.sku = s.sku), 0) AS ledger FROM ${t.stock} s`,
  );
  let oversold = 0;
  let stockLedgerAgrees = true;
  for (const s of stock.rows) {
    const taken = initial[s.sku]! - s.qty;
    oversold += Math.max(0, taken - (demand.get(s.sku) ?? 0));
    if (initial[s.sku]! + Number(s.ledger) !== s.qty) stockLedgerAgrees = false;
  }
  const unbalanced = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM (
       SELECT o.id FROM ${t.orders} o LEFT JOIN ${t.ledger} l ON l.order_id = o.id GROUP BY o.id
       HAVING COALESCE(sum(l.delta), 0) <> (CASE WHEN o.status = 'placed' THEN -o.qty ELSE 0 END)) u`,
  );
  const ledgerReconciles = stockLedgerAgrees && Number(unbalanced.rows[0]!.n) === 0;

  const verdict = {
    ordersPlaced: Number(placed),
    duplicateOrdersCreated: Number(rows) - Number(keys),
    duplicateOrdersLeft: Number(left),
    oversoldUnits: oversold,
    ledgerReconciles,
  };
  const failures: string[] = [];
  if (verdict.duplicateOrdersLeft > 0) failures.push(`${verdict.duplicateOrdersLeft} orders exist twice`);
  if (oversold > 0) failures.push(`${oversold} units oversold`);
  if (!ledgerReconciles) failures.push('the ledger does not reconcile');
  if (verdict.ordersPlaced !== requests) failures.push(`${verdict.ordersPlaced} of ${requests} requests placed`);
  if (soldOut > 0) failures.push(`${soldOut} orders refused for want of stock`);
  return { ...verdict, ok: failures.length === 0, failures };
}
