import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTs } from '../support/child.js';
import { databaseUrl as url, requirePostgres } from '../support/postgres.js';

// CI installs and starts PostgreSQL (.ci/run); elsewhere a machine without it skips this one test.
const skip = await requirePostgres('examples/fenced-http.ts');

test('examples/fenced-http.ts: the service accepts newer fences and answers 409 to a late write with an older one', { skip }, async () => {
  const r = await runTs(['examples/fenced-http.ts'], 60_000, { DATABASE_URL: url });
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    fences: [string, string];
    statuses: number[];
    stored: { body: string; fence: string };
  };
  assert.ok(BigInt(out.fences[1]) > BigInt(out.fences[0]));
  assert.deepEqual(out.statuses, [204, 204, 409]);
  assert.deepEqual(out.stored, { body: 'day,total\n1,12\n', fence: out.fences[1] });
});
