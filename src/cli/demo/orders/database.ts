// Where the orders live: PostgreSQL, either embedded (PGlite, served to the worker processes over its socket
// server on a free loopback port: nothing to install) or a server the user names with --database-url. The
// same SQL runs on both. Each run keeps its tables in a schema of its own and drops it at the end: nothing
// of the user's is read or written.
import type { Pool } from 'pg';
import { fenceTableSql, transaction, type SqlClient, type SqlPool } from '../../../pg/index.js';
import { CliError } from '../../output.js';
import type { Layer } from './plan.js';

/** A database the run can reach: its URL (for the workers) and how to let go of it. */
export interface OrdersDatabase {
  readonly url: string;
  /** 'embedded PostgreSQL (PGlite)' or the server's URL without its password */
  readonly label: string;
  /** the embedded server (its statements need {@link statements}) */
  readonly embedded: boolean;
  close(): Promise<void>;
}

/** The pg module, loaded only when the orders scenario runs (pg is an optional peer dependency). */
export async function loadPg(): Promise<typeof import('pg').default> {
  try {
    return (await import('pg')).default;
  } catch {
    throw new CliError('the orders scenario needs the pg package: npm install pg', 2);
  }
}

/** Starts the embedded database (`url` undefined) or checks that the server at `url` answers. */
export async function openDatabase(url: string | undefined): Promise<OrdersDatabase> {
  if (url) {
    const pg = await loadPg();
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
    } catch (error) {
      throw new CliError(`cannot reach the database at ${redact(url)}: ${(error as Error).message}`, 2);
    } finally {
      await client.end().catch(() => undefined);
    }
    return { url, label: redact(url), embedded: false, close: async () => undefined };
  }
  let modules: [typeof import('@electric-sql/pglite'), typeof import('@electric-sql/pglite-socket')];
  try {
    modules = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-socket')]);
  } catch {
    throw new CliError(
      'the embedded database needs @electric-sql/pglite and @electric-sql/pglite-socket (npm install them), or give --database-url',
      2,
    );
  }
  const [{ PGlite }, { PGLiteSocketServer }] = modules;
  const db = await PGlite.create();
  // PGlite runs one statement at a time; the socket server queues the connections' statements and keeps a
  // transaction's statements together, so each worker still gets its own connection and transactions.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 64 });
  await server.start();
  const address = server.getServerConn(); // host:port, the port the system picked
  return {
    url: `postgres://postgres@${address}/postgres`,
    label: `embedded PostgreSQL (PGlite) on ${address}`,
    embedded: true,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}

/** A pool to run statements on, alone (`query`) or in a transaction (`connect`). */
export interface Db extends SqlClient, SqlPool {}

/**
 * `pool` as the scenario's code uses it. The embedded server interleaves the messages of its connections
 * one by one, except inside a transaction: a parameterised statement (parse, bind, execute) sent outside
 * one can meet another connection's and lose its portal. So there each statement that stands alone runs in
 * a transaction of its own, which is what autocommit does anyway.
 */
export function statements(pool: Pool, embedded: boolean): Db {
  if (!embedded) return pool;
  return { connect: () => pool.connect(), query: (text, values) => transaction(pool, (db) => db.query(text, values)) };
}

const redact = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** The tables of one run, qualified by its schema. */
export function tables(schema: string) {
  return {
    schema,
    stock: `${schema}.stock`,
    orders: `${schema}.orders`,
    ledger: `${schema}.stock_ledger`,
    log: `${schema}.reconciliation_log`,
    fences: `${schema}.fencelock_fences`,
  };
}
export type Tables = ReturnType<typeof tables>;

/**
 * The run's schema: stock per SKU, orders, the stock ledger (every change of stock, with its order), the
 * reconciliation log, and the table of accepted fences. The unique layer is the UNIQUE index on the orders'
 * idempotency key; without it the same key can be ordered twice.
 */
export async function createSchema(pool: Pool, t: Tables, layers: readonly Layer[], stock: Record<string, number>): Promise<void> {
  await pool.query(`CREATE SCHEMA ${t.schema}`);
  await pool.query(`CREATE TABLE ${t.stock} (sku text PRIMARY KEY, qty int NOT NULL, initial int NOT NULL)`);
  await pool.query(`CREATE TABLE ${t.orders} (
    id bigserial PRIMARY KEY,
    idempotency_key text NOT NULL,
    sku text NOT NULL REFERENCES ${t.stock} (sku),
    qty int NOT NULL,
    fence bigint,
    worker int NOT NULL,
    status text NOT NULL DEFAULT 'placed',
    created_at timestamptz NOT NULL DEFAULT now())`);
  if (layers.includes('unique')) await pool.query(`CREATE UNIQUE INDEX orders_idempotency_key ON ${t.orders} (idempotency_key)`);
  await pool.query(`CREATE TABLE ${t.ledger} (
    id bigserial PRIMARY KEY,
    order_id bigint REFERENCES ${t.orders} (id),
    sku text NOT NULL,
    delta int NOT NULL,
    reason text NOT NULL,
    at timestamptz NOT NULL DEFAULT now())`);
  await pool.query(
    `CREATE TABLE ${t.log} (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), kind text NOT NULL, detail text NOT NULL)`,
  );
  await pool.query(fenceTableSql({ table: t.fences }));
  for (const [sku, qty] of Object.entries(stock)) {
    await pool.query(`INSERT INTO ${t.stock} (sku, qty, initial) VALUES ($1, $2, $2)`, [sku, qty]);
  }
}

export async function dropSchema(pool: Pool, t: Tables): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${t.schema} CASCADE`);
}
