// Summarises a V8 .cpuprofile (`node --cpu-prof`): self time by origin (fencelock, the Redis client, Node
// internals, garbage collection, idle) and the costliest functions. Used for docs/benchmarks.md:
//
//   node --import tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a function comes from, by its script's URL. */
export function originOf(url: string, name: string): string {
  if (name === '(garbage collector)') return 'garbage collection';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'program (native, unattributed)';
  if (/\/fencelock\/|\/work\/(?:wt\/)?[^/]+\/(src|dist)\//.test(url) && !url.includes('node_modules')) return 'fencelock';
  if (url.includes('node_modules/ioredis') || url.includes('node_modules/redis-parser') || url.includes('node_modules/denque'))
    return 'ioredis';
  if (url.includes('node_modules/@redis') || url.includes('node_modules/redis/')) return 'node-redis';
  if (url.includes('/bench/')) return 'benchmark driver';
  if (url.startsWith('node:') || url === '') return 'Node internals';
  return 'other';
}

export function summarise(profile: CpuProfile): {
  total: number;
  byOrigin: Map<string, number>;
  byFunction: Map<string, number>;
  byFencelockCaller: Map<string, number>;
  inclusive: Map<string, number>;
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // The innermost fencelock frame on a sample's stack: what the client library and Node did on fencelock's behalf.
  const fencelockCaller = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame && originOf(frame.url, frame.functionName) === 'fencelock')
        return `${frame.functionName || '(anonymous)'}  ${frame.url.replace(/^file:\/\/.*\/(src|dist)\//, '$1/')}:${frame.lineNumber + 1}`;
    }
    return '(not under fencelock)';
  };
  const byFencelockCaller = new Map<string, number>();
  // Inclusive: the samples with this fencelock function anywhere on their stack (each function once per sample).
  const inclusive = new Map<string, number>();
  const fencelockFrames = (id: number): Set<string> => {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame && originOf(frame.url, frame.functionName) === 'fencelock')
        seen.add(
          `${frame.functionName || '(anonymous)'}  ${frame.url.replace(/^file:\/\/.*\/(src|dist)\//, '$1/')}:${frame.lineNumber + 1}`,
        );
    }
    return seen;
  };
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byOrigin = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const origin = originOf(url, functionName);
    if (origin === 'idle') continue;
    total += us;
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + us);
    const file = url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(src|dist)\//, '$1/');
    const key = `${functionName || '(anonymous)'}  ${file}:${lineNumber + 1}  [${origin}]`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    for (const f of fencelockFrames(id)) inclusive.set(f, (inclusive.get(f) ?? 0) + us);
    const caller = fencelockCaller(id);
    byFencelockCaller.set(caller, (byFencelockCaller.get(caller) ?? 0) + us);
  }
  return { total, byOrigin, byFunction, byFencelockCaller, inclusive };
}

function main(): void {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
  const files = args.filter((a, i) => !a.startsWith('--') && (topAt < 0 || i !== topAt + 1));
  for (const file of files) {
    const { total, byOrigin, byFunction, byFencelockCaller, inclusive } = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
    const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
    console.log(`${file}: ${(total / 1000).toFixed(0)} ms busy`);
    for (const [origin, us] of [...byOrigin].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(us)}  ${origin}`);
    console.log(`  top ${top} functions by self time:`);
    for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${fn}`);
    console.log(`  self time of everything, charged to the innermost fencelock function on its stack:`);
    for (const [fn, us] of [...byFencelockCaller].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${fn}`);
    console.log(`  fencelock functions by inclusive time (on the stack; synchronous parts only):`);
    for (const [fn, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${fn}`);
  }
}

main();
