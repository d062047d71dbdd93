// The orders example, end to end: 50 orders, 20 of them delivered twice at the same moment to two instances
// of a service; then a reconciliation pass; then a summary. Exit code 0 when every order was placed exactly
// once and the ledger accounts for all the stock taken.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx examples/orders/main.ts
//
// Starts 3 local Redis lock nodes (or uses LOCK_NODES=redis://...,redis://...). Works in a schema of its own,
// orders_example_<pid>, dropped at the end.
import { LockManager } from '../../src/index.js';
import { startRedisNodes } from '../../src/testing/index.js';
import { openOrdersDatabase } from './database.js';
import { placeOrder, startReconciler, type OrderRequest, type Repairs } from './orders.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const STOCK = { 'sku-a': 100, 'sku-b': 100 };

const local = process.env.LOCK_NODES ? undefined : await startRedisNodes(3);
const lockNodes = process.env.LOCK_NODES?.split(',') ?? local!.urls;
const db = await openOrdersDatabase(url, `orders_example_${process.pid}`, STOCK).catch(async (error: unknown) => {
  await local?.stop();
  throw error;
});
// Two instances of the service: a LockManager each, as two processes would have.
const instances = [new LockManager(lockNodes), new LockManager(lockNodes)];

try {
  const orders: OrderRequest[] = Array.from({ length: 50 }, (_, i) => ({
    key: `order-${i}`,
    sku: i % 2 ? 'sku-b' : 'sku-a',
    qty: 1 + (i % 3),
  }));
  // The first 20 arrive twice (a retried request, a redelivered message), once at each instance.
  const deliveries = orders.flatMap((order, i) => (i < 20 ? [0, 1] : [i % 2]).map((n) => placeOrder(instances[n]!, db.pool, order)));
  // Every delivery settles before any failure is reported: dropping the schema (finally, below) under a write
  // still in flight deadlocks in PostgreSQL, and that error would hide the one that matters.
  const settled = await Promise.allSettled(deliveries);
  const failure = settled.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failure) throw failure.reason;
  const outcomes = settled.map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<typeof placeOrder>>>).value);
  const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;

  // Both instances run the reconciler; a service leaves it to its schedule, here one tick is run on both at once.
  const passes: Repairs[] = [];
  const reconcilers = instances.map((locks) =>
    startReconciler(locks, db.pool, 60_000, { immediately: false, onPass: (p) => passes.push(p.repairs) }),
  );
  const ticks = await Promise.all(reconcilers.map((r) => r.runNow()));
  await Promise.all(reconcilers.map((r) => r.stop()));

  const stock = await db.pool.query<{ sku: string; qty: number; ledger: string }>(
    `SELECT s.sku, s.qty, s.initial + COALESCE((SELECT sum(delta) FROM stock_ledger l WHERE l.sku = s.sku), 0) AS ledger
       FROM stock s ORDER BY s.sku`,
  );
  const placed = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM orders WHERE status = 'placed'`);
  const taken = orders.reduce((sum, o) => sum + o.qty, 0);
  const stockLeft = Object.fromEntries(stock.rows.map((r) => [r.sku, r.qty]));
  const summary = {
    schema: db.schema,
    orders: orders.length,
    deliveries: deliveries.length,
    created: count('created'),
    duplicates: count('duplicate'),
    soldOut: count('sold-out'),
    ordersInDatabase: Number(placed.rows[0]!.n),
    stockTaken: Object.values(STOCK).reduce((a, b) => a + b, 0) - stock.rows.reduce((sum, r) => sum + r.qty, 0),
    stockLeft,
    // stock = initial + ledger for every SKU
    ledgerReconciles: stock.rows.every((r) => r.qty === Number(r.ledger)),
    reconciliation: { ticks, repairs: passes },
  };
  console.log(JSON.stringify(summary));
  const repaired = passes.some((p) => p.duplicatesCancelled + p.ledgerEntries + p.stockDrift > 0);
  const ok =
    summary.created === orders.length &&
    summary.duplicates === deliveries.length - orders.length &&
    summary.ordersInDatabase === orders.length &&
    summary.stockTaken === taken &&
    summary.ledgerReconciles &&
    passes.length >= 1 &&
    !repaired;
  process.exitCode = ok ? 0 : 1;
} finally {
  await Promise.all(instances.map((locks) => locks.close()));
  await db.close();
  await local?.stop();
}
