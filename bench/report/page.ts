// docs/benchmarks.md: a fixed text around the markers, the generated results between them.
import { BEGIN, END } from './markdown.js';

const INTRO = `# Benchmarks

How fencelock compares with other Redis lock libraries for Node.js, and with a raw floor: the protocol's
minimum sent by hand with ioredis. Everything runs on one machine, against the same five throw-away
\`redis-server\` processes, in the same run. Numbers from a shared 2-core machine are noisy: read them as
ratios between libraries in one run, not as absolute figures.

## Running it

\`\`\`sh
npm run bench              # full run: bench/results/<date>.json, this page, benchmarks.svg
npm run bench -- --workloads design   # the design's table alone, into .tmp/bench/
node --import tsx bench/run.ts --quick   # smoke run, tiny counts, into .tmp/bench/
node --import tsx bench/run.ts --libraries fencelock/ioredis,raw-floor --workloads W3 --modes redlock5
node --import tsx bench/render.ts bench/results/<date>.json   # rewrite this page's results and the chart
\`\`\`

The compared libraries are exact-pinned devDependencies of the root package (installed by \`npm ci\`; two
versions of redlock under the aliases \`redlock-v4\` and \`redlock-v5\`); they all use the root's ioredis.
A cell that throws or hangs (it is killed after a time limit) is reported as failed, with its error.

## How it is measured

- Five \`redis-server\` nodes are started by \`fencelock/testing\`. *Single node* uses node 0 alone; *5 nodes* is
  Redlock over all five (quorum 3). Before every cell the orchestrator runs \`FLUSHALL\`, \`SCRIPT FLUSH\` and
  \`CONFIG RESETSTAT\` on every node, and each (workload, library, mode) cell runs in a fresh Node process.
- Every library gets the same lease (\`ttl\` 10 s), an acquire timeout of about 10 s, and 10 ms retry delays,
  configured the way its README documents; the exact settings are listed under the results.
- **Redis cmds/op**: \`INFO commandstats\` deltas summed over all five nodes over the measured window, divided by
  the operations in that window (the benchmark's own \`INFO\` calls removed). Redis counts the commands a Lua
  script runs as well: an \`EVALSHA\` whose script calls \`GET\` and \`DEL\` counts 3. **Client CPU**:
  \`process.cpuUsage()\` of the cell process (W4: the sum over its worker processes) over the same window, per
  operation; it covers all threads of the process, so JIT compilation and garbage collection are included.
- **Every cell runs in a fresh Node process**: its library set up, 200 warm-up pairs, then the measured ones.
- **W1** one caller, sequential acquire + release on fresh keys; latency of the pair. *Cold*: the process's
  first pair and the mean of its first 100 (the warm-up, timed); *warm*: p50 and p99 of the pairs after them.
- **W2** 64 concurrent callers, each on its own fresh keys, for 3 s; acquire + release pairs completed per second.
- **W3** 16 callers in one process on ONE key: acquire, hold 1 ms, release, acquire again, for 4 s.
  *Wait*: from calling acquire to holding, for every acquire started in the window (callers still waiting at
  the end are followed until they get the lock, or give up). *Handoff gap*: from a holder calling release to
  the next holder's acquire resolving (so it includes the release round trip). *Fairness*: acquisitions per
  caller, as max/min (∞ when a caller never got the lock) and Jain's index (1 = perfectly even). A wait p50
  near 0 next to a high max/min means barging: the caller that has just released usually takes the lock again
  at once, while the others wait for a retry to land in the short moment the key is free.
- **W4** as W3, but 4 processes × 4 callers. Every hold is timestamped with \`performance.timeOrigin +
  performance.now()\`, a clock all processes of the machine share, and the parent merges the holds of all
  processes to compute gaps and fairness.
- **The design's table**: 3 nodes; 10, 50 and 100 clients each on a key of its own, 3 s; ops/s and mean latency.
- **W5** 10,000 locks held at once for 5 s with the library's auto-extension running (ttl 3 s, so every
  library extends at least once; acquired with at most 256 acquisitions in flight): heap bytes per held lock (\`heapUsed\` after forced GC, held minus before,
  / 10,000) and the event-loop delay p99 during the hold (\`monitorEventLoopDelay\`). Libraries without
  auto-extension are n/a.
`;

const OUTRO = `
## Where the time goes

TODO
`;

/** The page with `generated` between the markers: the existing page's text around them is kept. */
export function renderPage(existing: string | undefined, generated: string): string {
  const block = `${BEGIN}\n${generated}\n${END}`;
  if (existing) {
    const a = existing.indexOf(BEGIN);
    const b = existing.indexOf(END);
    if (a >= 0 && b > a) return existing.slice(0, a) + block + existing.slice(b + END.length);
  }
  return `${INTRO}\n## Results\n\n${block}\n${OUTRO}`;
}
