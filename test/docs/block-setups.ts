// What each docs code block needs around it to run, and what its run must show. A block runs as it is written
// (its `fencelock`, `fencelock/testing` and `fencelock/pg` imports mapped to src/); a setup adds only what the
// text says is the reader's own: the `locks` an earlier block made, `chargeInvoice`, `stock`, `db`, a table.
// Its names start with `$` (never in the docs), so they cannot clash with the block's own. The servers are
// the test's: Redis nodes at $FENCELOCK_NODES and an embedded PostgreSQL at $DATABASE_URL.
import type { CodeBlock } from '../support/code-blocks.js';

export interface BlockSetup {
  /** the Markdown file, from the repository root */
  readonly doc: string;
  /** picks the block: text only it contains */
  readonly contains: string;
  /** statements before the block (its imports are hoisted above them); may use the previous blocks of the doc */
  readonly prelude?: string | ((earlier: readonly CodeBlock[]) => string);
  /** statements after the block, in its scope (they see its declarations): checks of what it did */
  readonly check?: string;
  /** statements after the block's scope ends: closing what the prelude opened */
  readonly cleanup?: string;
  /** what the block's run must print on stdout */
  readonly stdout?: RegExp;
}

/** Imported by every block's program, under names the docs never use. */
export const HEADER = (src: string): string => `import $assert from 'node:assert/strict';
import $pg from 'pg';
import { Redis as $Redis } from 'ioredis';
import * as $fencelock from '${src}/index.js';
import * as $fencelockPg from '${src}/pg/index.js';
`;

/** The README's `locks`, on the test's nodes (a short ttl: nothing here holds a lock for long). */
const LOCKS = `const $urls = process.env.FENCELOCK_NODES!.split(',');
const $clients = $urls.map((url) => new $Redis(url));
const locks = new $fencelock.LockManager($clients, { ttl: 5_000 });
`;
const CLOSE_LOCKS = `await locks.close();
$clients.forEach((c) => c.disconnect());
`;

/** The reader's PostgreSQL (one connection: the embedded server runs one statement at a time). */
const POOL = `const pool = new $pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
`;
const CLOSE_POOL = `await pool.end();
`;

/** Waits (bounded) for a scheduled job's first tick to end, then checks it ran and wrote its fence. */
const FIRST_TICK = (
  job: string,
): string => `for (let $i = 0; $i < 200 && ${job}.ran + ${job}.failed + ${job}.skipped === 0; $i++) await new Promise((r) => setTimeout(r, 25));
await ${job}.stop();
$assert.deepEqual([${job}.ran, ${job}.failed, ${job}.skipped], [1, 0, 0], 'the first tick ran and did not fail');
const $claimed = await pool.query("SELECT fence FROM fencelock_fences WHERE resource = 'reconcile:orders'");
$assert.equal($claimed.rowCount, 1, 'the tick claimed its fence in the fence table');
`;

/** The stock row the SQL fence check updates. */
const STOCK_ROW = `${LOCKS}const db = new $pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
await db.query('DROP TABLE IF EXISTS stock');
await db.query('CREATE TABLE stock (sku text PRIMARY KEY, qty int NOT NULL, fence bigint NOT NULL DEFAULT 0)');
await db.query("INSERT INTO stock (sku, qty) VALUES ('sku-123', 5)");
const sku = 'sku-123';
const newQty = 4;
const lock = await locks.acquire('stock:sku-123');
`;
const STOCK_WRITTEN = `const $row = await db.query('SELECT qty, fence FROM stock WHERE sku = $1', [sku]);
$assert.deepEqual($row.rows[0], { qty: 4, fence: lock.fence.toString() });
`;
const CLOSE_STOCK = `await lock.release();
await db.end();
${CLOSE_LOCKS}`;

/** The reconciliation pass of the orders example: here a read in the job's fenced transaction. */
const RECONCILE_PASS = `async function reconcilePass(db: { query(text: string): Promise<unknown> }): Promise<void> {
  await db.query('SELECT 1');
}
`;

export const SETUPS: readonly BlockSetup[] = [
  // README.md
  {
    doc: 'README.md',
    contains: "locks.acquire('invoice:42'",
    prelude: `const $charged: bigint[] = [];
async function chargeInvoice(_invoice: number, o: { fence: bigint }): Promise<void> {
  $charged.push(o.fence);
}
`,
    check: `$assert.equal($charged.length, 1, 'chargeInvoice ran once, with the fence');`,
  },
  {
    doc: 'README.md',
    contains: "locks.withLock('stock:sku-123'",
    prelude: `${LOCKS}const $stock = new Map([['sku-123', 5]]);
const stock = {
  get: async (sku: string, o: { signal: AbortSignal }) => {
    o.signal.throwIfAborted();
    return $stock.get(sku)!;
  },
  set: async (sku: string, qty: number, o: { fence: bigint; signal: AbortSignal }) => {
    o.signal.throwIfAborted();
    $stock.set(sku, qty);
  },
};
`,
    check: `$assert.equal(left, 4);
$assert.equal($stock.get('sku-123'), 4);`,
    cleanup: CLOSE_LOCKS,
  },
  {
    doc: 'README.md',
    contains: 'async function dailyReport()',
    prelude: `${LOCKS}const $reports: bigint[] = [];
async function buildDailyReport(o: { fence: bigint }): Promise<void> {
  $reports.push(o.fence);
}
`,
    check: `await dailyReport();
$assert.equal($reports.length, 1);
$assert.equal((await locks.inspect('report:daily')).holder, null, 'released when the function returned');`,
    cleanup: CLOSE_LOCKS,
  },
  {
    doc: 'README.md',
    contains: 'createClient({ url }).connect()',
    prelude: `const urls = process.env.FENCELOCK_NODES!.split(',');
`,
  },
  {
    doc: 'README.md',
    contains: "'UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2'",
    prelude: STOCK_ROW,
    check: STOCK_WRITTEN,
    cleanup: CLOSE_STOCK,
  },
  {
    doc: 'README.md',
    contains: "locks.semaphore('pdf-renderers', { limit: 3 })",
    prelude: `${LOCKS}const doc = 'invoice-42.pdf';
const $saved: string[] = [];
async function render(d: string, o: { signal: AbortSignal }): Promise<string> {
  o.signal.throwIfAborted();
  return \`rendered \${d}\`;
}
async function loadCatalog(): Promise<string[]> {
  return ['sku-1', 'sku-2'];
}
async function saveCatalog(items: string[], o: { fence: bigint }): Promise<void> {
  $assert.ok(o.fence > 0n);
  $saved.push(...items);
}
`,
    check: `$assert.deepEqual($saved, ['sku-1', 'sku-2']);`,
    cleanup: CLOSE_LOCKS,
  },
  {
    doc: 'README.md',
    contains: "scheduleSingleton(locks, 'reconcile:orders'",
    prelude: `${LOCKS}${POOL}${RECONCILE_PASS}`,
    check: FIRST_TICK('job'),
    cleanup: `${CLOSE_POOL}${CLOSE_LOCKS}`,
  },

  // docs/fencing.md
  {
    doc: 'docs/fencing.md',
    contains: "'UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2'",
    prelude: STOCK_ROW,
    check: STOCK_WRITTEN,
    cleanup: CLOSE_STOCK,
  },
  {
    doc: 'docs/fencing.md',
    contains: 'store.eval(FENCED_SET',
    // FENCED_SET is the Lua block just above it in the doc, so that block runs too.
    prelude: (earlier) => `${LOCKS}const FENCED_SET = ${JSON.stringify([...earlier].reverse().find((b) => b.lang === 'lua')!.code)};
const store = new $Redis($urls[0]!);
await store.del('stock:sku-123');
const newQty = 4;
const lock = await locks.acquire('stock:sku-123');
`,
    check: `$assert.deepEqual(await store.hgetall('stock:sku-123'), { qty: '4', fence: lock.fence.toString() });
await $assert.rejects(store.eval(FENCED_SET, 1, 'stock:sku-123', String(lock.fence - 1n), '3'), /STALE_FENCE/);
$assert.equal(await store.hget('stock:sku-123', 'qty'), '4', 'the stale write changed nothing');`,
    cleanup: `await lock.release();
store.disconnect();
${CLOSE_LOCKS}`,
  },

  // docs/layers.md
  {
    doc: 'docs/layers.md',
    contains: 'fencedTransaction(pool, lock, async (db) =>',
    prelude: `${LOCKS}${POOL}const key = 'order-1';
`,
    check: `const $claimed = await pool.query("SELECT fence FROM fencelock_fences WHERE resource = 'order:order-1'");
$assert.equal($claimed.rowCount, 1, 'the transaction claimed the lock fence');`,
    cleanup: `${CLOSE_POOL}${CLOSE_LOCKS}`,
  },
  {
    doc: 'docs/layers.md',
    contains: "const reconciler = scheduleSingleton(locks, 'reconcile:orders'",
    // fencedTransaction was imported by the doc's first TypeScript block; the fence table was made there too.
    prelude: `${LOCKS}${POOL}${RECONCILE_PASS}const { fencedTransaction } = $fencelockPg;
await pool.query($fencelockPg.fenceTableSql());
const log = { error: (fields: object, message: string) => console.error(message, fields) };
`,
    check: FIRST_TICK('reconciler'),
    cleanup: `${CLOSE_POOL}${CLOSE_LOCKS}`,
  },

  // docs/observability.md
  {
    doc: 'docs/observability.md',
    contains: 'interface AcquireTraceContext {',
    // The block restates the exported type: the type-check fails if the two differ.
    prelude: `type Lock = $fencelock.Lock;
type $Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
`,
    check: `const $same: $Same<AcquireTraceContext, $fencelock.AcquireTraceContext> = true;
$assert.equal($same, true);`,
  },
  {
    doc: 'docs/observability.md',
    contains: 'const audited = new LockManager(clients, { meterProvider })',
    prelude: `const clients = process.env.FENCELOCK_NODES!.split(',').map((url) => new $Redis(url));
`,
    check: `await (await audited.acquire('metered')).release();
await locks.close();
await audited.close();
await meterProvider.shutdown();
metrics.disable();`,
    cleanup: `clients.forEach((c) => c.disconnect());`,
  },
  {
    doc: 'docs/observability.md',
    contains: 'DIAGNOSTICS_CHANNELS.acquire',
    prelude: LOCKS,
    check: `await (await locks.acquire('traced')).release();`,
    cleanup: CLOSE_LOCKS,
    stdout: /^acquire \[ 'traced' \] acquired \d/m,
  },

  // docs/semaphores-and-rwlocks.md
  {
    doc: 'docs/semaphores-and-rwlocks.md',
    contains: "const pool = locks.semaphore('pdf-renderers'",
    prelude: `${LOCKS}const doc = 'invoice-42.pdf';
let $saved: string[] = [];
async function render(d: string, o: { signal: AbortSignal }): Promise<string> {
  o.signal.throwIfAborted();
  return \`rendered \${d}\`;
}
async function loadCatalog(): Promise<string[]> {
  return ['sku-1'];
}
const next = ['sku-1', 'sku-2'];
async function saveCatalog(items: string[], o: { fence: bigint }): Promise<void> {
  $assert.ok(o.fence > 0n);
  $saved = items;
}
`,
    check: `$assert.equal(out, 'rendered invoice-42.pdf');
$assert.notEqual(maybe, null, 'a permit is free');
await maybe!.release();
$assert.deepEqual(items, ['sku-1']);
$assert.deepEqual($saved, ['sku-1', 'sku-2']);
$assert.equal(await catalog.tryWrite(), null, 'a reader holds the catalog');`,
    cleanup: CLOSE_LOCKS,
  },
];
