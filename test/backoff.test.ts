// Capped exponential backoff with full jitter: pure arithmetic, no timers.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { backoffDelay } from '../src/backoff.js';
import { DEFAULTS, resolveAcquireOptions, type ResolvedRetry } from '../src/options.js';

const retry = (o: Partial<ResolvedRetry>): ResolvedRetry => ({ ...DEFAULTS.retry, ...o });
// The cap has a 1 ms floor (minDelay 0 must not mean a busy loop); maxDelay is at least 1 by validation.
const capOf = (r: ResolvedRetry, attempt: number): number => Math.min(r.maxDelay, Math.max(1, r.minDelay) * r.factor ** attempt);

/** Any retry config the options accept (so it went through the real validation). */
const validRetry = fc
  .record({
    minDelay: fc.integer({ min: 0, max: 2_000 }),
    extra: fc.integer({ min: 0, max: 10_000 }),
    factor: fc.double({ min: 1, max: 10, noNaN: true }),
    jitter: fc.constantFrom('full' as const, 'none' as const),
  })
  .map(
    ({ minDelay, extra, factor, jitter }) =>
      resolveAcquireOptions({ retry: { minDelay, maxDelay: Math.max(1, minDelay + extra), factor, jitter } }, DEFAULTS).retry,
  );

describe('backoffDelay', () => {
  test('retry.maxDelay 0 is rejected: waiting would become a busy loop', () => {
    assert.throws(() => resolveAcquireOptions({ retry: { minDelay: 0, maxDelay: 0 } }, DEFAULTS), { code: 'INVALID_ARGUMENT' });
  });

  test('minDelay 0 still backs off: the cap starts at 1 ms and grows', () => {
    const r = retry({ minDelay: 0, maxDelay: 100, factor: 2, jitter: 'none' });
    assert.deepEqual(
      [0, 1, 2, 3].map((a) => backoffDelay(r, a)),
      [1, 2, 4, 8],
    );
  });

  test("jitter 'none' is exactly the capped exponential: min, min*f, min*f^2 ... maxDelay", () => {
    const r = retry({ minDelay: 25, maxDelay: 1_000, factor: 2, jitter: 'none' });
    assert.deepEqual(
      Array.from({ length: 8 }, (_, a) => backoffDelay(r, a)),
      [25, 50, 100, 200, 400, 800, 1_000, 1_000],
    );
  });

  test('the defaults reach maxDelay and stay there, also after a huge number of attempts', () => {
    const r = retry({ jitter: 'none' });
    assert.equal(backoffDelay(r, 0), DEFAULTS.retry.minDelay);
    const reached = Array.from({ length: 100 }, (_, a) => backoffDelay(r, a)).indexOf(DEFAULTS.retry.maxDelay);
    assert.ok(reached > 0 && reached < 10, `maxDelay reached after ${reached} attempts`);
    for (const a of [reached, 50, 1_000, 1e6, Number.MAX_SAFE_INTEGER]) assert.equal(backoffDelay(r, a), DEFAULTS.retry.maxDelay);
  });

  test("jitter 'full' is uniform in [0, cap]: the random source picks the point", () => {
    const r = retry({ minDelay: 10, maxDelay: 500, factor: 3, jitter: 'full' });
    assert.equal(
      backoffDelay(r, 2, () => 0),
      0,
    );
    assert.equal(
      backoffDelay(r, 2, () => 0.5),
      45,
    );
    assert.ok(Math.abs(backoffDelay(r, 2, () => 0.999999) - 90) < 0.001);
    assert.ok(Math.abs(backoffDelay(r, 30, () => 0.999999) - 500) < 0.001);
  });

  test('full jitter spreads waiters out (not all at the cap, not all at zero)', () => {
    const r = retry({ minDelay: 100, maxDelay: 100, factor: 2, jitter: 'full' });
    const samples = Array.from({ length: 2_000 }, () => backoffDelay(r, 3));
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    assert.ok(mean > 40 && mean < 60, `mean ${mean} of a uniform [0, 100]`);
    assert.ok(new Set(samples.map((s) => Math.floor(s / 10))).size === 10, 'every tenth of the range is hit');
  });

  test('property: the delay is always finite and within [0, cap], cap <= maxDelay', () => {
    fc.assert(
      fc.property(validRetry, fc.nat({ max: 10_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (r, attempt, u) => {
        const d = backoffDelay(r, attempt, () => u);
        assert.ok(Number.isFinite(d), `delay ${d}`);
        assert.ok(d >= 0 && d <= capOf(r, Math.min(attempt, 64)) + 1e-9, `delay ${d} outside [0, ${capOf(r, attempt)}]`);
        assert.ok(d <= r.maxDelay);
        if (r.jitter === 'none') assert.equal(d, capOf(r, Math.min(attempt, 64)));
      }),
      { numRuns: 1_000 },
    );
  });

  test('property: the cap never shrinks from one attempt to the next', () => {
    fc.assert(
      fc.property(validRetry, fc.nat({ max: 200 }), (r, attempt) => {
        const none = { ...r, jitter: 'none' as const };
        assert.ok(backoffDelay(none, attempt + 1) >= backoffDelay(none, attempt));
      }),
      { numRuns: 500 },
    );
  });

  test('property: with factor > 1 the cap grows to maxDelay, whatever minDelay the options accept', () => {
    // A waiter that gets no notification must slow down: a cap stuck at 0
    // would make it re-send its acquire as fast as the round trips allow.
    fc.assert(
      fc.property(
        validRetry.filter((r) => r.factor >= 1.5 && r.maxDelay > 0),
        (r) => {
          const none = { ...r, jitter: 'none' as const };
          assert.equal(backoffDelay(none, 200), r.maxDelay, `retry ${JSON.stringify(r)} never backs off to maxDelay`);
        },
      ),
      { numRuns: 500 },
    );
  });
});
