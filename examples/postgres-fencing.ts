// Guarding your own database with fencing tokens: stock deduction where
// PostgreSQL itself rejects a writer whose lock has expired.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx examples/postgres-fencing.ts
//
// Starts 3 local Redis lock nodes (or uses LOCK_NODES=redis://...,redis://...).
// Whichever worker holds the lock when a third of the stock is sold stalls inside
// its critical section for longer than its lease, like a process in a long GC
// pause; its late write must be rejected.
import pg from 'pg';
import { LockLostError, LockManager } from '../src/index.js';
import { startRedisNodes } from '../src/testing/index.js';

const STOCK = Number(process.env.STOCK ?? 60);
const WORKERS = 4;
const TTL = 500;

const db = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: WORKERS + 1 });
const table = `fencelock_example_${process.pid}`;
const local = process.env.LOCK_NODES ? undefined : await startRedisNodes(3);
const lockNodes = process.env.LOCK_NODES?.split(',') ?? local!.urls;

try {
  await db.query(`CREATE TABLE ${table} (sku text PRIMARY KEY, stock int NOT NULL, fence bigint NOT NULL DEFAULT 0)`);
  await db.query(`INSERT INTO ${table} (sku, stock) VALUES ('sku-1', $1)`, [STOCK]);

  // The fence check is part of the write itself: one statement, so there is no window between check and write.
  const fencedWrite = async (stock: number, fence: bigint): Promise<boolean> => {
    const result = await db.query(`UPDATE ${table} SET stock = $1, fence = $2 WHERE sku = 'sku-1' AND fence < $2`, [
      stock,
      fence.toString(),
    ]);
    return result.rowCount === 1;
  };

  let sold = 0;
  let staleRejected = 0;
  let stalled = false;
  const worker = async (): Promise<void> => {
    const locks = new LockManager(lockNodes, { ttl: TTL, nodeTimeout: 50, acquireTimeout: 30_000 });
    try {
      for (let soldOut = false; !soldOut;) {
        try {
          soldOut = await locks.withLock(
            'sku-1',
            async (lock) => {
              const { rows } = await db.query<{ stock: number }>(`SELECT stock FROM ${table} WHERE sku = 'sku-1'`);
              const stock = rows[0]!.stock;
              if (stock <= 0) return true;
              if (!stalled && sold >= STOCK / 3) {
                stalled = true;
                // The "GC pause": longer than the lease, and the write below does not look at lock.signal.
                await new Promise((r) => setTimeout(r, TTL * 3));
              }
              if (await fencedWrite(stock - 1, lock.fence)) sold++;
              else staleRejected++;
              return false;
            },
            // A real GC pause stops the event loop, extensions included; an in-process sleep would not,
            // so the lease is not auto-extended here (each sale takes a few ms of its 500 ms lease).
            { autoExtend: false },
          );
        } catch (error) {
          if (!(error instanceof LockLostError)) throw error;
          // The stalled worker learns here that its lease ended; its write was already turned away.
        }
      }
    } finally {
      await locks.close();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, () => worker()));

  const { rows } = await db.query<{ stock: number; fence: string }>(`SELECT stock, fence FROM ${table} WHERE sku = 'sku-1'`);
  const finalStock = rows[0]!.stock;
  const result = {
    stock: STOCK,
    sold,
    finalStock,
    oversold: Math.max(0, sold - (STOCK - finalStock)),
    staleRejected,
    lastFence: rows[0]!.fence,
  };
  console.log(JSON.stringify(result));
  process.exitCode = result.oversold === 0 && finalStock === 0 && sold === STOCK && staleRejected >= 1 ? 0 : 1;
} finally {
  await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  await db.end();
  await local?.stop();
}
