import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { runTs } from '../support/child.js';
import { requireComponent } from '../support/optional.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function postgresUp(): Promise<boolean> {
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

// CI installs and starts PostgreSQL (.ci/run); elsewhere a machine without it skips this one test.
const up = await postgresUp();

test(
  'examples/postgres-fencing.ts: no oversell, and PostgreSQL rejects the stalled writer',
  { skip: requireComponent(up, `PostgreSQL at ${url}`, 'postgresql') },
  async () => {
    const result = await runTs(['examples/postgres-fencing.ts'], 60_000, { DATABASE_URL: url });
    assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
    const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as {
      stock: number;
      sold: number;
      finalStock: number;
      oversold: number;
      staleRejected: number;
    };
    assert.equal(summary.finalStock, 0);
    assert.equal(summary.sold, summary.stock);
    assert.equal(summary.oversold, 0);
    assert.ok(summary.staleRejected >= 1, `stale writes rejected: ${summary.staleRejected}`);
  },
);
