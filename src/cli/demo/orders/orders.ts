// Placing one order, layer by layer: the state check under the lock, and the write (the order, its stock, its
// ledger entry) either in one transaction guarded by the unique key and the lock's fence, or, without the
// unique layer, as the separate statements naive code would send.
import { claimFence, transaction, type SqlClient } from '../../../pg/index.js';
import type { Db, Tables } from './database.js';
import type { Delivery, Layer } from './plan.js';

/**
 * How one delivery ended: a new order; a duplicate stopped by the state check, by the unique key, or by the
 * fence (a newer holder of the order's lock has written); or refused for want of stock.
 */
export type Outcome = 'created' | 'state' | 'unique' | 'fence' | 'sold-out';

/** Layer 2: has this idempotency key been ordered already? Read under the order's lock. */
export async function alreadyPlaced(db: SqlClient, t: Tables, key: string): Promise<boolean> {
  const found = await db.query(`SELECT 1 FROM ${t.orders} WHERE idempotency_key = $1 AND status = 'placed' LIMIT 1`, [key]);
  return found.rowCount !== null && found.rowCount > 0;
}

export interface WriteOptions {
  readonly layers: readonly Layer[];
  /** the order's lock (when the lock layer is on): its fence is claimed before anything is written */
  readonly lock?: { readonly resources: readonly string[]; readonly fence: bigint };
  readonly worker: number;
  /** called between the order's insert and its stock update (where the kill-worker fault strikes) */
  readonly midWrite?: () => Promise<void>;
}

class Refused extends Error {
  constructor(readonly outcome: Outcome) {
    super(outcome);
  }
}

/** Writes the order: the order row, the stock taken, the ledger entry that records it. */
export async function writeOrder(pool: Db, t: Tables, d: Delivery, o: WriteOptions): Promise<Outcome> {
  const steps = async (db: SqlClient): Promise<Outcome> => {
    // Layer 1 at the store: the fence. A holder whose lease ran out (a pause, a freeze) is turned away here
    // once a newer holder of this order's lock has written.
    if (o.lock && (await claimFence(db, o.lock, { table: t.fences })) !== undefined) throw new Refused('fence');
    const insert = o.layers.includes('unique')
      ? `INSERT INTO ${t.orders} (idempotency_key, sku, qty, fence, worker) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`
      : `INSERT INTO ${t.orders} (idempotency_key, sku, qty, fence, worker) VALUES ($1, $2, $3, $4, $5) RETURNING id`;
    const order = await db.query(insert, [d.key, d.sku, d.qty, o.lock?.fence.toString() ?? null, o.worker]);
    // Layer 3: the unique key. A duplicate that got past everything above is a clean no-op here.
    if (order.rowCount === 0) throw new Refused('unique');
    await o.midWrite?.();
    const taken = await db.query(`UPDATE ${t.stock} SET qty = qty - $2 WHERE sku = $1 AND qty >= $2`, [d.sku, d.qty]);
    if (taken.rowCount === 0) throw new Refused('sold-out');
    await db.query(`INSERT INTO ${t.ledger} (order_id, sku, delta, reason) VALUES ($1, $2, $3, 'order')`, [
      order.rows[0]!.id,
      d.sku,
      -d.qty,
    ]);
    return 'created';
  };
  try {
    // With the unique layer the three writes are one transaction: all of them or none.
    return o.layers.includes('unique') ? await transaction(pool, steps) : await steps(pool);
  } catch (error) {
    if (error instanceof Refused) return error.outcome;
    throw error;
  }
}
