import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTs } from '../support/child.js';

/** The value of the one sample in a Prometheus scrape whose name and labels match. */
function sample(scrape: string, name: string, labels: Record<string, string>): number {
  const matches = scrape
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)));
  assert.equal(matches.length, 1, `one ${name} ${JSON.stringify(labels)} sample, found:\n${matches.join('\n')}`);
  return Number(matches[0]!.split(' ').pop());
}

test('examples/prometheus-metrics.ts: serves /metrics with fencelock instruments, prints one scrape and exits', async () => {
  const result = await runTs(['examples/prometheus-metrics.ts'], 60_000, { REDIS_URL: '', METRICS_PORT: '' });
  assert.equal(result.code, 0, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  const scrape = result.stdout;
  const acquires = (method: string, outcome: string): number =>
    sample(scrape, 'fencelock_acquire_duration_count', { fencelock_method: method, fencelock_outcome: outcome });
  assert.equal(acquires('withLock', 'acquired'), 5);
  assert.equal(acquires('acquire', 'acquired'), 1);
  assert.equal(acquires('tryAcquire', 'busy'), 1);
  assert.equal(acquires('acquire', 'timeout'), 1);
  const timedOut = sample(scrape, 'fencelock_acquire_duration_sum', { fencelock_outcome: 'timeout' });
  assert.ok(timedOut >= 0.1, `the timed-out acquire waited its 100 ms: ${timedOut} s`);
  assert.equal(sample(scrape, 'fencelock_hold_duration_count', { fencelock_outcome: 'released' }), 6);
  assert.equal(sample(scrape, 'fencelock_locks_held', {}), 0);
  assert.ok(sample(scrape, 'fencelock_acquire_attempts_total', {}) >= 8, 'every acquire call counted as an attempt');
  assert.match(scrape, /^# TYPE fencelock_acquire_duration histogram$/m);
  assert.match(scrape, /^fencelock_acquire_duration_bucket\{.*le="\+Inf"\} \d+$/m);
});
