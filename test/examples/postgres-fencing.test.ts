import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTs } from '../support/child.js';
import { databaseUrl as url, requirePostgres } from '../support/postgres.js';

// CI installs and starts PostgreSQL (.ci/run); elsewhere a machine without it skips this one test.
const skip = await requirePostgres('examples/postgres-fencing.ts');

test('examples/postgres-fencing.ts: no oversell, and PostgreSQL rejects the stalled writer', { skip }, async () => {
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
});
