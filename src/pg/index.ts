// fencelock/pg: fencing tokens checked by PostgreSQL, in the same transaction as the writes they guard.
//
// The database keeps, per resource, the highest fence it has accepted (one row in a table of its own). A
// writer claims its lock's fence inside its transaction: the claim succeeds when no newer fence was accepted
// for that resource, and the row stays locked until the transaction ends, so a stale writer can neither slip
// in between the check and the writes nor commit after a newer holder. Nothing here imports a database
// driver: any client with pg's `query(text, values)` shape works (pg, a pg Pool client, PGlite).
import { InvalidArgumentError, LockError } from '../errors.js';

/** What a statement returns, as pg gives it. */
export interface SqlResult {
  /** rows written or returned */
  rowCount: number | null;
  /** the rows returned */
  rows: Array<Record<string, unknown>>;
}

/** A connection that runs one statement: pg's `Client` / `PoolClient`, or anything of the same shape. */
export interface SqlClient {
  /** Runs one statement with `$1`-style parameters. */
  query(text: string, values?: unknown[]): Promise<SqlResult>;
}

/** A connection lent by a pool. */
export interface PooledSqlClient extends SqlClient {
  /** Gives the connection back; with an error: broken, not to be lent again. */
  release(error?: Error | boolean): void;
}

/** A pool that lends connections: pg's `Pool`. */
export interface SqlPool {
  /** Lends a connection. */
  connect(): Promise<PooledSqlClient>;
}

/** What a fence claim needs of a lock (a fencelock `Lock` has both). */
export interface FencedLock {
  /** the resources the lock holds: one fence row each */
  readonly resources: readonly string[];
  /** the lock's fencing token */
  readonly fence: bigint;
}

/** Options of the helpers below. */
export interface FenceTableOptions {
  /** the table of accepted fences (default `fencelock_fences`; may be schema-qualified) */
  table?: string;
}

/** A write was refused: a holder with a newer fence has already written this resource. */
export class StaleFenceError extends LockError {
  /** the resource a newer holder has written */
  readonly resource: string;
  /** the refused (older) fence */
  readonly fence: bigint;
  constructor(resource: string, fence: bigint) {
    super('STALE_FENCE', `stale fence ${fence} for ${JSON.stringify(resource)}: a newer holder has written it`);
    this.resource = resource;
    this.fence = fence;
  }
}

const DEFAULT_TABLE = 'fencelock_fences';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

function tableName(o?: FenceTableOptions): string {
  const table = o?.table ?? DEFAULT_TABLE;
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
    throw new InvalidArgumentError(`table must be a plain SQL identifier (optionally schema.table), got ${JSON.stringify(table)}`);
  }
  return table;
}

/** The `CREATE TABLE IF NOT EXISTS` statement for the table of accepted fences. */
export function fenceTableSql(o?: FenceTableOptions): string {
  return `CREATE TABLE IF NOT EXISTS ${tableName(o)} (
  resource text PRIMARY KEY,
  fence bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;
}

/**
 * Claims `lock.fence` for each of the lock's resources, inside the caller's transaction. Returns the first
 * resource whose claim was refused (a newer fence was accepted there: roll the transaction back), or
 * `undefined` when every claim holds. An equal fence is accepted: only the same holder has it.
 */
export async function claimFence(db: SqlClient, lock: FencedLock, o?: FenceTableOptions): Promise<string | undefined> {
  const table = tableName(o);
  if (typeof lock?.fence !== 'bigint' || !Array.isArray(lock.resources) || lock.resources.length === 0) {
    throw new InvalidArgumentError('claimFence needs a lock (resources and a bigint fence)');
  }
  // Sorted, so two transactions claiming overlapping resources lock their rows in the same order.
  for (const resource of [...lock.resources].sort()) {
    const claimed = await db.query(
      `INSERT INTO ${table} AS t (resource, fence) VALUES ($1, $2)
       ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence, updated_at = now()
       WHERE t.fence <= EXCLUDED.fence`,
      [resource, lock.fence.toString()],
    );
    if (claimed.rowCount !== 1) return resource;
  }
  return undefined;
}

/**
 * Runs `fn` in a transaction on a connection of `pool`: commits and resolves with `fn`'s result, or rolls
 * back and rejects with `fn`'s error.
 */
export async function transaction<T>(pool: SqlPool, fn: (db: SqlClient) => Promise<T>): Promise<T> {
  const db = await pool.connect();
  let broken: Error | undefined;
  try {
    await db.query('BEGIN');
    const result = await fn(db);
    await db.query('COMMIT');
    return result;
  } catch (error) {
    await db.query('ROLLBACK').catch((rollbackError: unknown) => {
      // The connection is unusable: give it back broken, so the pool does not lend it again.
      broken = rollbackError as Error;
    });
    throw error;
  } finally {
    db.release(broken);
  }
}

/**
 * Runs `fn` in a transaction that first claims the lock's fence ({@link claimFence}): commits what `fn`
 * wrote and resolves with its result, or rolls back and rejects with {@link StaleFenceError} when a newer
 * holder has written (and with `fn`'s error when `fn` throws).
 */
export function fencedTransaction<T>(
  pool: SqlPool,
  lock: FencedLock,
  fn: (db: SqlClient) => Promise<T>,
  o?: FenceTableOptions,
): Promise<T> {
  tableName(o);
  return transaction(pool, async (db) => {
    const stale = await claimFence(db, lock, o);
    if (stale !== undefined) throw new StaleFenceError(stale, lock.fence);
    return fn(db);
  });
}

/**
 * Deletes the fence rows not claimed for `olderThan` ms, so the table stays bounded when resources are many
 * and short-lived (one per order, say). Safe as long as no holder can stay paused that long: a writer whose
 * row was pruned would be accepted again. Returns how many rows went.
 */
export async function pruneFences(db: SqlClient, olderThan: number, o?: FenceTableOptions): Promise<number> {
  const table = tableName(o);
  if (!Number.isInteger(olderThan) || olderThan < 1)
    throw new InvalidArgumentError(`olderThan must be a positive integer (ms), got ${olderThan}`);
  const pruned = await db.query(`DELETE FROM ${table} WHERE updated_at < now() - ($1::bigint * interval '1 millisecond')`, [olderThan]);
  return pruned.rowCount ?? 0;
}
