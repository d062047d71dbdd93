// docs/fencing.md's "A service over HTTP": the client sends lock.fence with its PUT, and the service checks it
// and writes in one SQL statement, so a write carrying an older fence than the last accepted one gets 409.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx examples/fenced-http.ts
//
// Starts 3 local Redis lock nodes and the service on a free port; works in a schema of its own (dropped at the
// end). Two holders write one after the other; then a request the first holder had sent earlier arrives late
// (a retry, a slow proxy) and is refused. Prints one JSON line and exits by itself. In an application, import
// from 'fencelock' and 'fencelock/testing' rather than ../src.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { LockManager } from '../src/index.js';
import { startRedisNodes } from '../src/testing/index.js';

const schema = `fencelock_http_${process.pid}`;
const db = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  options: `-c search_path=${schema}`,
});
await using nodes = await startRedisNodes(3);
const locks = new LockManager(nodes.urls, { ttl: 5_000 });

// service: check and write in one statement
const server = createServer(async (req, res) => {
  const fence = req.headers['fencing-token'];
  if (typeof fence !== 'string' || !/^[0-9]+$/.test(fence)) return void res.writeHead(400).end();
  let body = '';
  for await (const chunk of req) body += chunk;
  const result = await db.query(
    `INSERT INTO files (path, body, fence) VALUES ($1, $2, $3)
     ON CONFLICT (path) DO UPDATE SET body = $2, fence = $3 WHERE files.fence < $3`,
    [req.url, body, fence],
  );
  res.writeHead(result.rowCount === 1 ? 204 : 409).end();
});

// client: the fence goes with the write; the signal cancels it if the lock is lost meanwhile
async function putReport(base: string, fence: bigint, reportCsv: string, signal: AbortSignal): Promise<number> {
  const res = await fetch(`${base}/reports/daily.csv`, {
    method: 'PUT',
    headers: { 'fencing-token': fence.toString() },
    body: reportCsv,
    signal,
  });
  return res.status;
}

try {
  await db.query(`CREATE SCHEMA ${schema}`);
  await db.query('CREATE TABLE files (path text PRIMARY KEY, body text NOT NULL, fence bigint NOT NULL)');
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const first = await locks.acquire('report:daily');
  const firstStatus = await putReport(base, first.fence, 'day,total\n1,10\n', first.signal);
  await first.release();

  const second = await locks.acquire('report:daily');
  const secondStatus = await putReport(base, second.fence, 'day,total\n1,12\n', second.signal);
  await second.release();

  // The first holder's write, delivered again late: its fence is older than the one the service accepted last.
  const lateStatus = await putReport(base, first.fence, 'day,total\n1,10\n', AbortSignal.timeout(5_000));
  const stored = await db.query('SELECT body, fence FROM files WHERE path = $1', ['/reports/daily.csv']);
  console.log(
    JSON.stringify({
      fences: [first.fence.toString(), second.fence.toString()],
      statuses: [firstStatus, secondStatus, lateStatus],
      stored: stored.rows[0] as { body: string; fence: string },
    }),
  );
} finally {
  server.close();
  await locks.close();
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
}
