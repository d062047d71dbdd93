// examples/orders: the four layers against duplicate orders, on a real PostgreSQL and real local Redis nodes.
// Each test works in a schema of its own (dropped at the end) and asserts what the database holds.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openOrdersDatabase, type OrdersDatabase } from '../../examples/orders/database.js';
import { placeOrder, reconcile, startReconciler, writeOrder, type ReconcilePass } from '../../examples/orders/orders.js';
import { LockManager } from '../../src/index.js';
import { fenceTableSql, StaleFenceError } from '../../src/pg/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../../src/testing/index.js';
import { runTs } from '../support/child.js';
import { databaseUrl as url, requirePostgres } from '../support/postgres.js';

// CI installs and starts PostgreSQL (.ci/run); elsewhere a machine without it skips these tests.
const skip = await requirePostgres('examples/orders');

let nodes: LocalRedisNodes | undefined;
const managers: LockManager[] = [];
const newManager = (): LockManager => {
  const locks = new LockManager(nodes!.urls);
  managers.push(locks);
  return locks;
};
before(async () => {
  if (!skip) nodes = await startRedisNodes(3);
});
after(async () => {
  await Promise.all(managers.map((m) => m.close()));
  await nodes?.stop();
});

let schemas = 0;
/** Runs `fn` on a fresh copy of the example's tables, in a schema dropped afterwards. */
async function withDatabase(stock: Record<string, number>, fn: (db: OrdersDatabase) => Promise<void>): Promise<void> {
  const db = await openOrdersDatabase(url, `orders_test_${process.pid}_${++schemas}`, stock);
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

const count = async (db: OrdersDatabase, sql: string, values: unknown[] = []): Promise<number> =>
  Number((await db.pool.query<{ n: string }>(sql, values)).rows[0]!.n);
const fenceOf = async (db: OrdersDatabase, resource: string): Promise<bigint> =>
  BigInt((await db.pool.query<{ fence: string }>('SELECT fence FROM fencelock_fences WHERE resource = $1', [resource])).rows[0]!.fence);
const stockOf = async (db: OrdersDatabase, sku: string): Promise<number> => count(db, 'SELECT qty AS n FROM stock WHERE sku = $1', [sku]);

test('schema.sql: its fence table is the one fenceTableSql() creates', async () => {
  const schema = await readFile('examples/orders/schema.sql', 'utf8');
  assert.ok(schema.includes(`${fenceTableSql()};`), 'schema.sql holds fenceTableSql() verbatim');
});

test('concurrent duplicate deliveries create one order each and take stock once', { skip }, async () => {
  await withDatabase({ 'sku-a': 100, 'sku-b': 1 }, async (db) => {
    // Two instances of the service; each of 20 orders is delivered 3 times at once, across both.
    const instances = [newManager(), newManager()];
    const orders = Array.from({ length: 20 }, (_, i) => ({ key: `k-${i}`, sku: 'sku-a', qty: 1 + (i % 3) }));
    const outcomes = await Promise.all(orders.flatMap((o) => [0, 1, 0].map((n) => placeOrder(instances[n]!, db.pool, o))));
    assert.equal(outcomes.filter((o) => o === 'created').length, 20);
    assert.equal(outcomes.filter((o) => o === 'duplicate').length, 40);
    const taken = orders.reduce((sum, o) => sum + o.qty, 0);

    assert.equal(await count(db, 'SELECT count(*) AS n FROM orders'), 20);
    assert.equal(await count(db, 'SELECT count(DISTINCT idempotency_key) AS n FROM orders'), 20);
    assert.equal(await count(db, 'SELECT count(*) AS n FROM stock_ledger'), 20);
    assert.equal(await count(db, `SELECT -sum(delta) AS n FROM stock_ledger WHERE sku = 'sku-a'`), taken);
    assert.equal(await stockOf(db, 'sku-a'), 100 - taken);
    // Each order carries the fence it was written under, and the fence table the one it claimed.
    assert.equal(
      await count(
        db,
        `SELECT count(*) AS n FROM orders o JOIN fencelock_fences f ON f.resource = 'order:' || o.idempotency_key AND f.fence = o.fence`,
      ),
      20,
    );

    // The last unit, ordered twice under different keys: one order; the other leaves no row behind.
    const last = await Promise.all(['last-1', 'last-2'].map((key, n) => placeOrder(instances[n]!, db.pool, { key, sku: 'sku-b', qty: 1 })));
    assert.deepEqual([...last].sort(), ['created', 'sold-out']);
    assert.equal(await count(db, `SELECT count(*) AS n FROM orders WHERE sku = 'sku-b'`), 1);
    assert.equal(await stockOf(db, 'sku-b'), 0);
  });
});

test('a write under a stale fence is rejected with StaleFenceError and writes nothing', { skip }, async () => {
  await withDatabase({ 'sku-a': 10 }, async (db) => {
    const locks = newManager();
    const order = { key: 'k-stale', sku: 'sku-a', qty: 2 };
    // An earlier holder of the order's lock, paused until its lease ran out (released here, its fence kept).
    const early = await locks.acquire(`order:${order.key}`);
    const staleFence = early.fence;
    await early.release();
    // Meanwhile a newer holder places the order.
    assert.equal(await placeOrder(locks, db.pool, order), 'created');
    const newer = await fenceOf(db, 'order:k-stale');
    assert.ok(newer > staleFence, `newer fence ${newer} > stale ${staleFence}`);

    const before = await snapshot(db);
    // The paused holder wakes and writes (with another quantity, so a write would show).
    const stale = { resources: [`order:${order.key}`], fence: staleFence };
    await assert.rejects(writeOrder(db.pool, stale, { ...order, qty: 5 }), (error: unknown) => {
      assert.ok(error instanceof StaleFenceError);
      assert.equal(error.resource, 'order:k-stale');
      assert.equal(error.fence, staleFence);
      return true;
    });
    // A fence one below the accepted one, built by hand, fares no better.
    await assert.rejects(writeOrder(db.pool, { resources: stale.resources, fence: newer - 1n }, order), StaleFenceError);
    assert.deepEqual(await snapshot(db), before);
    assert.equal(await fenceOf(db, 'order:k-stale'), newer);
  });
});

/** Everything an order write touches, to compare before and after. */
async function snapshot(db: OrdersDatabase): Promise<unknown> {
  const rows = async (sql: string) => (await db.pool.query(sql)).rows;
  return {
    orders: await rows('SELECT id, idempotency_key, sku, qty, fence, status FROM orders ORDER BY id'),
    ledger: await rows('SELECT id, order_id, sku, delta, reason FROM stock_ledger ORDER BY id'),
    stock: await rows('SELECT sku, qty FROM stock ORDER BY sku'),
  };
}

test('reconciliation repairs planted drift and a missing ledger entry, logs both, and a second pass finds nothing', { skip }, async () => {
  await withDatabase({ 'sku-a': 50, 'sku-b': 50 }, async (db) => {
    const locks = newManager();
    for (let i = 0; i < 4; i++)
      assert.equal(await placeOrder(locks, db.pool, { key: `k-${i}`, sku: i % 2 ? 'sku-b' : 'sku-a', qty: 2 }), 'created');
    const clean = await locks.withLock('orders:reconcile', (lock) => reconcile(db.pool, lock));
    assert.deepEqual(clean, { duplicatesCancelled: 0, ledgerEntries: 0, stockDrift: 0 });

    // Planted with SQL: sku-a's stock off by 3, and an order that took its stock but has no ledger entry
    // (a write path that skipped the ledger).
    await db.pool.query(`UPDATE stock SET qty = qty + 3 WHERE sku = 'sku-a'`);
    await db.pool.query(`INSERT INTO orders (idempotency_key, sku, qty, fence) VALUES ('k-unledgered', 'sku-b', 4, 0)`);
    await db.pool.query(`UPDATE stock SET qty = qty - 4 WHERE sku = 'sku-b'`);

    const repairs = await locks.withLock('orders:reconcile', (lock) => reconcile(db.pool, lock));
    assert.deepEqual(repairs, { duplicatesCancelled: 0, ledgerEntries: 1, stockDrift: 3 });
    assert.equal(await stockOf(db, 'sku-a'), 50 - 4);
    assert.equal(await stockOf(db, 'sku-b'), 50 - 4 - 4);
    assert.equal(
      await count(
        db,
        `SELECT delta AS n FROM stock_ledger l JOIN orders o ON o.id = l.order_id WHERE o.idempotency_key = 'k-unledgered' AND l.reason = 'reconciliation'`,
      ),
      -4,
    );
    const log = (await db.pool.query<{ kind: string; detail: string }>('SELECT kind, detail FROM reconciliation_log ORDER BY id')).rows;
    assert.deepEqual(
      log.map((r) => r.kind),
      ['ledger', 'stock'],
    );
    assert.match(log[0]!.detail, /k-unledgered/);
    assert.match(log[1]!.detail, /sku-a: stock 49 corrected to 46/);

    const again = await locks.withLock('orders:reconcile', (lock) => reconcile(db.pool, lock));
    assert.deepEqual(again, { duplicatesCancelled: 0, ledgerEntries: 0, stockDrift: 0 });
    assert.equal(await count(db, 'SELECT count(*) AS n FROM reconciliation_log'), 2);
  });
});

test('reconciliation cancels a duplicate order from before the UNIQUE constraint and returns its stock', { skip }, async () => {
  await withDatabase({ 'sku-a': 10 }, async (db) => {
    const locks = newManager();
    assert.equal(await placeOrder(locks, db.pool, { key: 'k-dup', sku: 'sku-a', qty: 3 }), 'created');
    // Rows as they were before the constraint: a second order for the key, with its stock and ledger entry.
    await db.pool.query('ALTER TABLE orders DROP CONSTRAINT orders_idempotency_key_key');
    const second = await db.pool.query<{ id: string }>(
      `INSERT INTO orders (idempotency_key, sku, qty, fence) VALUES ('k-dup', 'sku-a', 3, 0) RETURNING id`,
    );
    await db.pool.query(`INSERT INTO stock_ledger (order_id, sku, delta, reason) VALUES ($1, 'sku-a', -3, 'order')`, [second.rows[0]!.id]);
    await db.pool.query(`UPDATE stock SET qty = qty - 3 WHERE sku = 'sku-a'`);

    const repairs = await locks.withLock('orders:reconcile', (lock) => reconcile(db.pool, lock));
    // Cancelled; its -3 in the ledger balanced by +3; stock back to initial + ledger.
    assert.deepEqual(repairs, { duplicatesCancelled: 1, ledgerEntries: 1, stockDrift: 3 });
    assert.equal(await count(db, `SELECT count(*) AS n FROM orders WHERE status = 'placed'`), 1);
    assert.equal(await count(db, `SELECT status = 'cancelled' AS n FROM orders WHERE id = $1`, [second.rows[0]!.id]), 1);
    assert.equal(await stockOf(db, 'sku-a'), 7);
    assert.deepEqual(
      (await db.pool.query<{ kind: string }>('SELECT kind FROM reconciliation_log ORDER BY id')).rows.map((r) => r.kind),
      ['duplicate', 'ledger', 'stock'],
    );
    const again = await locks.withLock('orders:reconcile', (lock) => reconcile(db.pool, lock));
    assert.deepEqual(again, { duplicatesCancelled: 0, ledgerEntries: 0, stockDrift: 0 });
  });
});

test('two reconcilers on two LockManagers (scheduleSingleton) never run a pass at once', { skip }, async () => {
  await withDatabase({ 'sku-a': 100 }, async (db) => {
    const setup = newManager();
    for (let i = 0; i < 10; i++) await placeOrder(setup, db.pool, { key: `k-${i}`, sku: 'sku-a', qty: 1 });

    const passes: Array<ReconcilePass & { by: number }> = [];
    const errors: unknown[] = [];
    const reconcilers = [newManager(), newManager()].map((locks, by) =>
      startReconciler(locks, db.pool, 5, { onPass: (pass) => passes.push({ ...pass, by }), onError: (e) => errors.push(e) }),
    );
    try {
      // On top of the schedule (every 5 ms), rounds of ticks started on both at the same moment.
      for (let round = 0; round < 20; round++) {
        const ticks = await Promise.all(reconcilers.map((r) => r.runNow()));
        assert.ok(!ticks.includes('failed'), `round ${round}: ${ticks.join(', ')}: ${errors.map(String).join('; ')}`);
      }
    } finally {
      await Promise.all(reconcilers.map((r) => r.stop()));
    }
    assert.deepEqual(errors, []);
    for (const r of reconcilers) {
      assert.equal(r.failed, 0);
      assert.ok(r.ran + r.skipped >= 20, `ran ${r.ran} + skipped ${r.skipped}`);
    }
    assert.ok(reconcilers[0]!.skipped + reconcilers[1]!.skipped >= 1, 'some tick found the other reconciler running');
    assert.equal(passes.length, reconcilers[0]!.ran + reconcilers[1]!.ran);
    // No two passes overlap: sorted by start, each ends before the next starts.
    passes.sort((a, b) => a.started - b.started);
    for (let i = 1; i < passes.length; i++) {
      assert.ok(
        passes[i - 1]!.ended <= passes[i]!.started,
        `pass ${i - 1} (reconciler ${passes[i - 1]!.by}) overlaps pass ${i} (reconciler ${passes[i]!.by})`,
      );
    }
    assert.ok(passes.every((p) => p.repairs.duplicatesCancelled + p.repairs.ledgerEntries + p.repairs.stockDrift === 0));
  });
});

test('examples/orders/main.ts: 50 orders, 20 delivered twice: 50 created, 20 duplicates, ledger reconciles', { skip }, async () => {
  const result = await runTs(['examples/orders/main.ts'], 60_000, { DATABASE_URL: url });
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as {
    created: number;
    duplicates: number;
    ordersInDatabase: number;
    ledgerReconciles: boolean;
    schema: string;
    reconciliation: { ticks: string[] };
  };
  assert.equal(summary.created, 50);
  assert.equal(summary.duplicates, 20);
  assert.equal(summary.ordersInDatabase, 50);
  assert.equal(summary.ledgerReconciles, true);
  assert.ok(summary.reconciliation.ticks.includes('ran'));
  // Its schema is gone.
  assert.match(summary.schema, /^orders_example_\d+$/);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const left = await client.query('SELECT nspname FROM pg_namespace WHERE nspname = $1', [summary.schema]);
    assert.deepEqual(left.rows, []);
  } finally {
    await client.end();
  }
});
