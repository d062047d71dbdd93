// fencelock/pg against PostgreSQL itself: the real server at DATABASE_URL and the embedded one.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { InvalidArgumentError } from '../../src/index.js';
import { claimFence, fencedTransaction, fenceTableSql, pruneFences, StaleFenceError, transaction } from '../../src/pg/index.js';
import { databaseUrl, requirePostgres, startEmbeddedPostgres } from '../support/postgres.js';

const lock = (fence: number, ...resources: string[]) => ({ resources, fence: BigInt(fence) });

const servers: Array<{
  name: string;
  embedded: boolean;
  skip: false | string;
  url: () => Promise<{ url: string; close(): Promise<void> }>;
}> = [
  { name: 'embedded (PGlite)', embedded: true, skip: false, url: startEmbeddedPostgres },
  {
    name: 'PostgreSQL server',
    embedded: false,
    skip: await requirePostgres('fencelock/pg'),
    url: async () => ({ url: databaseUrl, close: async () => undefined }),
  },
];

for (const server of servers) {
  describe(`fencelock/pg: ${server.name}`, { skip: server.skip, timeout: 30_000 }, () => {
    let pool: pg.Pool;
    let close: () => Promise<void>;
    const schema = `fencelock_pg_test_${process.pid}`;
    const table = `${schema}.fences`;
    const o = { table };
    before(async () => {
      const db = await server.url();
      close = () => db.close();
      pool = new pg.Pool({ connectionString: db.url, max: 4 });
      await pool.query(`CREATE SCHEMA ${schema}`);
      await pool.query(fenceTableSql(o));
      await pool.query(`CREATE TABLE ${schema}.data (k text PRIMARY KEY, v int NOT NULL)`);
    });
    after(async () => {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
      await close();
    });
    const fenceOf = async (resource: string): Promise<string | undefined> =>
      (await pool.query<{ fence: string }>(`SELECT fence FROM ${table} WHERE resource = $1`, [resource])).rows[0]?.fence;

    test('claimFence: a first claim and a newer one hold, an older one is refused, the same one again holds', async () => {
      assert.equal(await claimFence(pool, lock(5, 'r1'), o), undefined);
      assert.equal(await claimFence(pool, lock(7, 'r1'), o), undefined);
      assert.equal(await claimFence(pool, lock(6, 'r1'), o), 'r1');
      assert.equal(await claimFence(pool, lock(7, 'r1'), o), undefined, 'the same holder writes twice');
      assert.equal(await fenceOf('r1'), '7');
      // A lock on several resources: the first refused one is named.
      assert.equal(await claimFence(pool, lock(3, 'r2', 'r1'), o), 'r1');
    });

    test('fencedTransaction commits with a current fence; a stale one rolls back and throws StaleFenceError; fn’s error rolls back', async () => {
      const value = await fencedTransaction(
        pool,
        lock(10, 'k'),
        async (db) => {
          await db.query(`INSERT INTO ${schema}.data (k, v) VALUES ('k', 1)`);
          return 'done';
        },
        o,
      );
      assert.equal(value, 'done');
      await assert.rejects(
        fencedTransaction(pool, lock(9, 'k'), (db) => db.query(`UPDATE ${schema}.data SET v = 99 WHERE k = 'k'`), o),
        (e: unknown) => e instanceof StaleFenceError && e.code === 'STALE_FENCE' && e.resource === 'k' && e.fence === 9n,
      );
      await assert.rejects(
        fencedTransaction(
          pool,
          lock(11, 'k'),
          async (db) => {
            await db.query(`UPDATE ${schema}.data SET v = 50 WHERE k = 'k'`);
            throw new Error('boom');
          },
          o,
        ),
        /boom/,
      );
      assert.equal((await pool.query(`SELECT v FROM ${schema}.data WHERE k = 'k'`)).rows[0].v, 1, 'neither write stayed');
      assert.equal(await fenceOf('k'), '10', 'the failed transaction’s claim was rolled back too');
    });

    // Only on the server: the embedded one runs one transaction at a time, so two open at once would wait for each other.
    if (!server.embedded)
      test('a newer holder that commits first turns the older one away, though the older one started first', async () => {
        const older = await pool.connect();
        try {
          await older.query('BEGIN');
          await older.query(`SELECT 1`); // the older writer is under way, paused before its claim
          await fencedTransaction(pool, lock(21, 'race'), (db) => db.query(`INSERT INTO ${schema}.data (k, v) VALUES ('race', 21)`), o);
          assert.equal(await claimFence(older, lock(20, 'race'), o), 'race');
          await older.query('ROLLBACK');
        } finally {
          older.release();
        }
        assert.equal((await pool.query(`SELECT v FROM ${schema}.data WHERE k = 'race'`)).rows[0].v, 21);
      });

    test('transaction: commits, or rolls back on error', async () => {
      await transaction(pool, (db) => db.query(`INSERT INTO ${schema}.data (k, v) VALUES ('t', 1)`));
      await assert.rejects(
        transaction(pool, async (db) => {
          await db.query(`UPDATE ${schema}.data SET v = 2 WHERE k = 't'`);
          throw new Error('no');
        }),
        /no/,
      );
      assert.equal((await pool.query(`SELECT v FROM ${schema}.data WHERE k = 't'`)).rows[0].v, 1);
    });

    test('pruneFences deletes the rows not claimed for longer than asked, and keeps the rest', async () => {
      await claimFence(pool, lock(1, 'old'), o);
      await pool.query(`UPDATE ${table} SET updated_at = now() - interval '1 hour' WHERE resource = 'old'`);
      await claimFence(pool, lock(1, 'fresh'), o);
      assert.equal(await pruneFences(pool, 60_000, o), 1);
      assert.equal(await fenceOf('old'), undefined);
      assert.equal(await fenceOf('fresh'), '1');
    });
  });
}

test('bad input is InvalidArgumentError before any statement', async () => {
  let statements = 0;
  const db = { query: async () => ((statements += 1), { rowCount: 1, rows: [] }) };
  assert.throws(() => fenceTableSql({ table: 'x; DROP TABLE users' }), InvalidArgumentError);
  await assert.rejects(claimFence(db, lock(1, 'r'), { table: 'a-b' }), InvalidArgumentError);
  await assert.rejects(claimFence(db, { resources: [], fence: 1n }), InvalidArgumentError);
  await assert.rejects(claimFence(db, { resources: ['r'], fence: 1 as unknown as bigint }), InvalidArgumentError);
  await assert.rejects(pruneFences(db, 0), InvalidArgumentError);
  assert.equal(statements, 0);
});
