// PostgreSQL for the tests: the real server at DATABASE_URL (an optional component: skipped without it,
// a failure in CI), and the embedded one (PGlite over its socket server) that needs no install.
import pg from 'pg';
import { openDatabase, type OrdersDatabase } from '../../src/cli/demo/orders/database.js';
import { requireComponent } from './optional.js';

export const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function postgresUp(url = databaseUrl): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The `skip` option of a test that needs the real server. */
export const requirePostgres = async (what: string): Promise<false | string> =>
  requireComponent(await postgresUp(), `PostgreSQL at ${databaseUrl} (${what})`, 'postgresql');

/** The embedded server, as the orders scenario starts it. */
export const startEmbeddedPostgres = (): Promise<OrdersDatabase> => openDatabase(undefined);
