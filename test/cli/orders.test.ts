// `fencelock demo --scenario orders`: the four layers against duplicate deliveries, each shown catching what
// the one above lets through when that one is broken; against the embedded database and a real server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OrdersReport } from '../../src/cli/demo/orders/run-orders.js';
import { runCli } from '../support/child.js';
import { databaseUrl, requirePostgres } from '../support/postgres.js';

const BASE = ['demo', '--scenario', 'orders', '--workers', '4', '--json'];
/**
 * Order requests per run. The runs with faults keep 60: the kill and the freeze fire at a third and at half of
 * the deliveries, and the frozen worker's redelivery must be placed by another before it wakes. The runs with
 * the lock broken and no faults need only duplicates in flight together: 30 requests (39 deliveries) left 10
 * duplicate orders and 29 oversold units with the lock alone, 4 no-ops for the unique key, and 14 duplicates
 * for reconciliation to cancel (`fencelock demo --scenario orders --workers 4 --orders 30 --json --break lock
 * --no-chaos [--layers lock | --layers lock,reconcile]`, 2026-11-26), in 4-7 s of workload instead of 11-15.
 */
const WITH_FAULTS = 60;
const NO_FAULTS = 30;

async function orders(args: readonly string[], expectCode = 0, env: NodeJS.ProcessEnv = {}): Promise<OrdersReport> {
  const count = args.includes('--no-chaos') ? NO_FAULTS : WITH_FAULTS;
  const r = await runCli([...BASE, '--orders', String(count), ...args], 120_000, env);
  assert.equal(r.code, expectCode, `exit ${r.code}\nstderr: ${r.stderr}\nstdout: ${r.stdout.slice(-2000)}`);
  return JSON.parse(r.stdout) as OrdersReport;
}

/** The end state every protected run must reach. */
function assertClean(r: OrdersReport): void {
  assert.equal(r.ok, true, r.failures.join('; '));
  assert.equal(r.duplicateOrdersLeft, 0);
  assert.equal(r.oversoldUnits, 0);
  assert.equal(r.ledgerReconciles, true);
  assert.equal(r.ordersPlaced, r.requests);
  assert.ok(r.duplicatesDelivered > 0, 'duplicates were delivered');
}

const postgresSkip = await requirePostgres('orders scenario');

// Two runs at a time: each is a CLI process with its worker processes, its lock nodes and its database, and
// mostly waits (about 8 s of CPU in 15-20 s); what each asserts is the run's outcome, not its speed.
describe('demo --scenario orders', { concurrency: 2 }, () => {
  test('all layers, with faults: PASS; the lock holds duplicates back, the state check finds them, the fence turns the frozen worker away', async (t) => {
    const r = await orders([]);
    t.diagnostic(`events: ${r.faults.join(' | ')}`);
    assertClean(r);
    assert.equal(r.duplicateOrdersCreated, 0);
    assert.ok(r.stopped.lockHeldBack > 0, `held back: ${r.stopped.lockHeldBack}`);
    assert.ok(r.stopped.stateCheck > 0, `state check: ${r.stopped.stateCheck}`);
    assert.ok(
      r.faults.some((e) => /worker \d+ frozen/.test(e)),
      'a worker was frozen',
    );
    assert.ok(r.stopped.fence >= 1, `fence: ${r.stopped.fence}`);
    assert.ok(
      r.faults.some((e) => /lock node \d+ .* killed/.test(e)),
      'a lock node was killed',
    );
    assert.ok(r.reconciliation.runs >= 1);
  });

  test('--break lock with the layers below: the unique key turns the duplicates that got past into no-ops; PASS', async () => {
    const r = await orders(['--break', 'lock', '--no-chaos']);
    assertClean(r);
    assert.ok(r.stopped.uniqueKey > 0, `unique key: ${r.stopped.uniqueKey}`);
    assert.equal(r.duplicateOrdersCreated, 0);
  });

  test('--break lock and nothing below it: duplicate orders and oversold stock, FAIL (exit 1)', async () => {
    const r = await orders(['--break', 'lock', '--layers', 'lock', '--no-chaos'], 1);
    assert.equal(r.ok, false);
    assert.ok(r.duplicateOrdersLeft > 0, `duplicates left: ${r.duplicateOrdersLeft}`);
    assert.ok(r.oversoldUnits > 0, `oversold: ${r.oversoldUnits}`);
    assert.match(r.failures.join('; '), /orders exist twice/);
  });

  test('--break lock with reconciliation only: the duplicates are created, then cancelled and their stock put back; PASS', async () => {
    const r = await orders(['--break', 'lock', '--layers', 'lock,reconcile', '--no-chaos']);
    assertClean(r);
    assert.ok(r.duplicateOrdersCreated > 0);
    assert.equal(r.reconciliation.duplicatesCancelled, r.duplicateOrdersCreated);
    assert.ok(r.reconciliation.stockDrift > 0);
  });

  test('without the transaction (no unique layer), a worker killed half-way through a write leaves damage that reconciliation repairs', async (t) => {
    const r = await orders(['--layers', 'lock,state,reconcile', '--faults', 'kill-worker']);
    t.diagnostic(`events: ${r.faults.join(' | ')}`);
    assertClean(r);
    assert.ok(
      r.faults.some((e) => /killed \(SIGKILL\) in the middle of writing/.test(e)),
      'a worker was killed mid-write',
    );
    assert.ok(r.reconciliation.ledgerEntries >= 1, `ledger entries: ${r.reconciliation.ledgerEntries}`);
  });

  test('--database-url: the same scenario on a real PostgreSQL server, its schema dropped afterwards', { skip: postgresSkip }, async () => {
    const r = await orders(['--database-url', databaseUrl, '--faults', 'freeze-worker']);
    assertClean(r);
    assert.ok(r.stopped.fence >= 1, `fence: ${r.stopped.fence}`);
    assert.match(r.database, /127\.0\.0\.1:5432/);
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const left = await client.query(
        `SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name LIKE 'fencelock_orders_%'`,
      );
      assert.equal(left.rows[0].n, 0, 'no schema of the scenario left behind');
    } finally {
      await client.end();
    }
  });

  test('bad input is usage (exit 2) before anything starts', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--layers', 'lock,paxos'], /--layers: unknown name paxos \(choose from lock, state, unique, reconcile\)/],
      [['--faults', 'meteor'], /--faults: unknown name meteor/],
      [['--break', 'state'], /--break: unknown name state/],
      [['--stock', '5'], /--stock: for the stock scenario/],
      [['--database-url', 'postgres://nobody@127.0.0.1:1/none'], /cannot reach the database at postgres:\/\/nobody@127\.0\.0\.1:1\/none/],
    ];
    // Without --json, so that a run that got going would show its header (printed once its lock nodes and
    // database are up); the options and the database URL are checked before either is started.
    const plain = BASE.filter((a) => a !== '--json');
    for (const [args, message] of cases) {
      const r = await runCli([...plain, ...args], 30_000);
      assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '', `nothing started, no header: ${r.stdout}`);
    }
    const stockOnly = await runCli(['demo', '--layers', 'lock'], 30_000);
    assert.equal(stockOnly.code, 2);
    assert.match(stockOnly.stderr, /--layers: for --scenario orders/);
  });
});
