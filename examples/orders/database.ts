// A pool on the example's tables, in a schema of their own so that nothing else in the database is touched.
// In a service, run schema.sql with your migrations instead and keep just the pool.
import { readFile } from 'node:fs/promises';
import pg from 'pg';

export interface OrdersDatabase {
  readonly pool: pg.Pool;
  readonly schema: string;
  /** drops the schema and ends the pool */
  close(): Promise<void>;
}

/** Creates `schema` with schema.sql's tables and `stock` (units per SKU) in it. */
export async function openOrdersDatabase(url: string, schema: string, stock: Record<string, number>): Promise<OrdersDatabase> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`not a plain schema name: ${schema}`);
  // Every connection resolves the unqualified table names in orders.ts to this schema. A startup option, not a
  // `SET search_path` from the pool's 'connect' event: the pool does not wait for that one, so the first query
  // on the connection is queued behind it, which pg 8 reports as deprecated (to be removed in pg 9).
  const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 10 });
  const drop = () => pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  try {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await pool.query(await readFile(new URL('./schema.sql', import.meta.url), 'utf8'));
    for (const [sku, qty] of Object.entries(stock)) {
      await pool.query('INSERT INTO stock (sku, qty, initial) VALUES ($1, $2, $2)', [sku, qty]);
    }
  } catch (error) {
    await drop().catch(() => undefined);
    await pool.end();
    throw error;
  }
  return {
    pool,
    schema,
    close: async () => {
      try {
        await drop();
      } finally {
        await pool.end();
      }
    },
  };
}
