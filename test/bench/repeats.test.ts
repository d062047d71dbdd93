// bench/repeats.ts: which cells run several times, in what order, and which run the report shows. Pure logic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRepeated, medianRun, runOrder } from '../../bench/repeats.js';
import type { CellId, CellResult } from '../../bench/types.js';

const cell = (workload: CellId['workload'], library: string, mode: CellId['mode'], clients?: number): CellId => ({
  workload,
  library,
  mode,
  ...(clients === undefined ? {} : { clients }),
});

test('the cells a target judges repeat: fencelock/ioredis and the floor on W1-W4 on Redis, and the design table', () => {
  assert.equal(isRepeated(cell('W1', 'fencelock/ioredis', 'single')), true);
  assert.equal(isRepeated(cell('W4', 'raw-floor', 'redlock5')), true);
  assert.equal(isRepeated(cell('W1', 'fencelock/node-redis', 'single')), false, 'no target judges it');
  assert.equal(isRepeated(cell('W3', 'fencelock/ioredis', 'etcd3')), false, 'the targets are Redis’s');
  assert.equal(isRepeated(cell('W5', 'fencelock/ioredis', 'single')), false, 'a fixed bound, not a ratio');
  assert.equal(isRepeated(cell('design', 'redlock@5-beta', 'redlock3', 10)), true);
});

test('per place, the repeated cells go round after round (A B A B A B), then the others once', () => {
  const cells = [
    cell('W1', 'fencelock/ioredis', 'single'),
    cell('W1', 'redlock@4', 'single'),
    cell('W1', 'raw-floor', 'single'),
    cell('W1', 'fencelock/ioredis', 'redlock5'),
    cell('W1', 'raw-floor', 'redlock5'),
  ];
  assert.deepEqual(runOrder(cells, [0, 1, 2, 3, 4], 3), [0, 2, 0, 2, 0, 2, 1, 3, 4, 3, 4, 3, 4]);
  assert.deepEqual(runOrder(cells, [0, 1, 2], 1), [0, 2, 1], 'one run each: the same cells, judged ones first');
});

test('the report shows the median run by the headline figure, with every run’s figure in run order', () => {
  const run = (acqPerSec: number | null, status: CellResult['status'] = 'ok'): CellResult => ({
    ...cell('W3', 'raw-floor', 'single'),
    status,
    wallMs: 1,
    metrics: { acqPerSec },
  });
  const chosen = medianRun([run(700), run(810), run(760)]);
  assert.equal(chosen.metrics?.acqPerSec, 760);
  assert.deepEqual(chosen.repeats, { metric: 'acqPerSec', values: [700, 810, 760] });
  const withFailure = medianRun([run(null, 'failed'), run(810), run(760)]);
  assert.equal(withFailure.metrics?.acqPerSec, 760, 'of two that measured, the lower');
  assert.deepEqual(withFailure.repeats?.values, [null, 810, 760]);
  assert.equal(medianRun([run(null, 'failed')]).status, 'failed', 'a cell that only failed stays failed');
  assert.equal(medianRun([run(700)]).repeats, undefined, 'one run: nothing to note');
});
