// The Quint model of the protocol (docs/model/fencelock.qnt), simulated: `npm run model` itself (the shipped
// protocol, hand-over in the release included, keeps every invariant over its 6,000 random traces), and two
// planted flaws that the same simulation must find from scratch: the old per-call-ttl restart quarantine
// (the majority-restart double grant), the waiter that dates a handed lease from its wake-up, and the one
// that dates it from its last busy attempt without comparing the grant's fence with the counter that
// attempt saw (docs/model/README.md has the figures).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

const QUINT = 'node_modules/@informalsystems/quint/dist/src/cli.js';
// `npm run model`, word for word: `quint run --main auto … docs/model/fencelock.qnt`.
const PACKAGE = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
const [MODEL_BIN, ...MODEL_ARGS] = (PACKAGE.scripts.model ?? '').split(/\s+/);
assert.equal(MODEL_BIN, 'quint');

// The model script's arguments with some options replaced (or added).
function withOptions(options: Record<string, string>): string[] {
  const args = [...MODEL_ARGS];
  for (const [name, value] of Object.entries(options)) {
    const at = args.indexOf(name);
    if (at >= 0) args[at + 1] = value;
    else args.splice(args.length - 1, 0, name, value);
  }
  return args;
}

interface Verdict {
  ok: boolean;
  output: string;
}

// Runs quint; never rejects (a violation exits non-zero), the tests judge the output.
function quint(args: readonly string[]): Promise<Verdict> {
  return new Promise((resolve) => {
    execFile(process.execPath, [QUINT, ...args], { encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const output = `${stdout}\n${stderr}\n${error?.message ?? ''}`;
      resolve({ ok: output.includes('[ok] No violation found'), output });
    });
  });
}

function verdict(run: Verdict): boolean {
  assert.ok(/\[ok\]|\[violation\]/.test(run.output), `quint gave no verdict:\n${run.output.slice(-2_000)}`);
  return run.ok;
}

// Seeds far apart: quint's generator is counter-based, so seeds 1, 2, 3 would run almost the same traces.
// Each finds its flaw well inside the 6,000-trace budget (docs/model/README.md lists the trace counts). One
// search per way of finding a flaw: the seeds are fixed, so a second seed of the same flaw replays another
// fixed walk that shows nothing the first does not (and costs a quint start, ~3 s of CPU, plus its traces).
// percall: 0x5b3e8d2c1f47, about 680 traces. wakeup (the planted flaw): 0x7a4d6e9b3c21, about 50
// traces. nocounter is found from scratch too (0x5b3e8d2c1f47: about 510 traces; docs/model/README.md lists
// the other seeds): here only its recorded trace is replayed, which shows the same flaw for a tenth of the CPU.
const PER_CALL_SEEDS = ['0x5b3e8d2c1f47'];
const WAKE_UP_SEEDS = ['0x7a4d6e9b3c21'];
// Seeds recorded from those runs: each replays its flaw in one trace.
const PER_CALL_RECORDED = '0x5b3e8d2e58df';
const WAKE_UP_RECORDED = '0x7a4d6e9b6311';
const NO_COUNTER_RECORDED = '0x5b3e8d2dcb3a';

// Searches with each seed for a violation of `invariant` in module `main`, one run after another.
async function search(main: string, invariant: string, seeds: readonly string[]): Promise<Verdict[]> {
  const runs: Verdict[] = [];
  for (const seed of seeds) runs.push(await quint(withOptions({ '--main': main, '--invariant': invariant, '--seed': seed })));
  return runs;
}

function replay(main: string, invariant: string, seed: string): Promise<Verdict> {
  return quint(withOptions({ '--main': main, '--invariant': invariant, '--seed': seed, '--max-samples': '1' }));
}

describe('the protocol model', () => {
  // One lane: `npm run model` (about 45 s of CPU on a 2-core machine of 2026-11-28), then the searches for the
  // planted flaws and the replays (about 45 s: seven quint starts at ~5 s each, and the traces). Each quint run
  // keeps a core busy; two at once took both cores from the two test files beside this one in `npm test`
  // (the suite's first 95 s at 100 % CPU), and the whole run waited on that.
  const shipped = quint(MODEL_ARGS);
  const flaws = shipped.then(async () => {
    const perCall = await search('percall', 'mutualExclusion', PER_CALL_SEEDS);
    const wakeUp = await search('wakeup', 'mutualExclusion', WAKE_UP_SEEDS);
    const perCallReplay = await replay('percall', 'mutualExclusion', PER_CALL_RECORDED);
    const wakeUpReplay = await replay('wakeup', 'mutualExclusion', WAKE_UP_RECORDED);
    const noCounterReplay = await replay('nocounter', 'mutualExclusion', NO_COUNTER_RECORDED);
    const safeReplays = [await replay('auto', 'safety', WAKE_UP_RECORDED), await replay('auto', 'safety', NO_COUNTER_RECORDED)];
    return { perCall, wakeUp, perCallReplay, wakeUpReplay, noCounterReplay, safeReplays };
  });

  test('npm run model: the shipped protocol (auto) keeps every invariant', async () => {
    const run = await shipped;
    assert.ok(verdict(run), run.output.slice(-3_000));
  });

  test('the per-call-ttl rule: the same simulation finds the majority-restart double grant from scratch', async () => {
    const { perCall } = await flaws;
    perCall.forEach((run, i) =>
      assert.equal(verdict(run), false, `seed ${PER_CALL_SEEDS[i]}: no double grant found\n${run.output.slice(-1_000)}`),
    );
  });

  test('a waiter that dates a handed lease from its wake-up: found from scratch', async () => {
    const { wakeUp } = await flaws;
    wakeUp.forEach((run, i) =>
      assert.equal(verdict(run), false, `seed ${WAKE_UP_SEEDS[i]}: no double grant found\n${run.output.slice(-1_000)}`),
    );
  });

  test('recorded seeds replay each flaw in one trace; the same schedules under the safe dating show none', async () => {
    const { perCallReplay, wakeUpReplay, noCounterReplay, safeReplays } = await flaws;
    assert.equal(verdict(perCallReplay), false, 'the old rule lets a short-ttl contender in while the long lease is valid');
    assert.equal(verdict(wakeUpReplay), false, 'a lease dated from the wake-up outlives the handed keys');
    assert.equal(verdict(noCounterReplay), false, 'a stale grant dated from a later attempt outlives its keys');
    for (const safe of safeReplays) assert.equal(verdict(safe), true, safe.output.slice(-3_000));
  });
});
