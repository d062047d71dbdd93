// The Quint model of the protocol (docs/model/fencelock.qnt), simulated: `npm run model` itself (the shipped
// restart quarantine keeps both invariants over its 6,000 random traces), and the same simulation with the
// old per-call-ttl rule, which must find the majority-restart double grant from scratch (docs/model/README.md
// has the figures).
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
const SEEDS = ['0x2f1c9a3b7d05', '0x5b3e8d2c1f47', '0x7a4d6e9b3c21'];
// A double grant found from scratch under the per-call rule: replaying its seed shows it in one trace.
const RECORDED = '0x91c2f5a90584';

describe('the protocol model', () => {
  // Two lanes, one per core: `npm run model` in one, the per-call runs and the replays in the other.
  const shipped = quint(MODEL_ARGS);
  const perCall = (async () => {
    const runs: Verdict[] = [];
    for (const seed of SEEDS)
      runs.push(await quint(withOptions({ '--main': 'percall', '--invariant': 'mutualExclusion', '--seed': seed })));
    return runs;
  })();
  const replays = perCall.then(async () => ({
    perCall: await quint(withOptions({ '--main': 'percall', '--invariant': 'mutualExclusion', '--seed': RECORDED, '--max-samples': '1' })),
    shipped: await quint(withOptions({ '--seed': RECORDED, '--max-samples': '1' })),
  }));

  test('npm run model: the shipped rule (auto) keeps both invariants', async () => {
    const run = await shipped;
    assert.ok(verdict(run), run.output.slice(-3_000));
  });

  test('the per-call-ttl rule: the same simulation finds the majority-restart double grant from scratch', async () => {
    const runs = await perCall;
    runs.forEach((run, i) => assert.equal(verdict(run), false, `seed ${SEEDS[i]}: no double grant found\n${run.output.slice(-1_000)}`));
  });

  test('a recorded seed replays the double grant under the per-call rule, and none under the shipped rule', async () => {
    const { perCall: bad, shipped: good } = await replays;
    assert.equal(verdict(bad), false, 'the old rule lets a short-ttl contender in while the long lease is valid');
    assert.equal(verdict(good), true, good.output.slice(-3_000));
  });
});
