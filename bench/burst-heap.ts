// What holds the heap of a burst's acquires in flight (issue 25): a heap snapshot before and right after N callers
// fire acquire() on distinct keys (nothing has settled then: that takes a round trip), the difference grouped by
// type and constructor, per caller. The figures in docs/benchmarks.md#burst and docs/how-it-works.md come from it.
//
//   node scripts/build.mjs && node --import tsx bench/burst-heap.ts [callers] [--dist <dir>] [--one-key]
//
// --one-key: every caller asks for the same key (they wait in line in the process, local-queue.ts).
//
// It loads the built package (dist/esm, or --dist another build); writes two snapshots into .tmp/ (hundreds of MB
// for 16,384 callers before admission) and reads them back, so give it a few GB (NODE_OPTIONS=--max-old-space-size=4000).
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { Redis } from 'ioredis';
import { startRedisNodes } from '../src/testing/index.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count per "type:constructor" (strings and code by type only). */
function summarize(file: string): Map<string, { count: number; size: number }> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const [types] = snap.snapshot.meta.node_types;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt] as number] as string;
    const named = !/string|code/.test(type);
    const key = named ? `${type}:${(snap.strings[snap.nodes[i + nameAt] as number] as string).slice(0, 60)}` : type;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += snap.nodes[i + sizeAt] as number;
    out.set(key, entry);
  }
  return out;
}

const argv = process.argv.slice(2);
const distAt = argv.indexOf('--dist');
const dist =
  distAt >= 0 ? path.resolve(argv[distAt + 1] as string) : path.join(path.dirname(fileURLToPath(import.meta.url)), '../dist/esm');
const oneKey = argv.includes('--one-key');
const callers = Number(argv.find((a, i) => /^\d+$/.test(a) && argv[i - 1] !== '--dist') ?? 16_384);
const { LockManager } = (await import(pathToFileURL(path.join(dist, 'index.js')).href)) as typeof import('../src/index.js');

const nodes = await startRedisNodes(1);
const client = new Redis(nodes.urls[0] as string);
const locks = new LockManager([client]);
const dir = '.tmp/burst-heap';
mkdirSync(dir, { recursive: true });
try {
  await (await locks.acquire('burst-heap-warm', { timeout: 120_000 })).release();
  const before = writeHeapSnapshot(path.join(dir, 'before.heapsnapshot'));
  const calls = Array.from({ length: callers }, (_, i) =>
    locks.acquire(oneKey ? 'burst-heap' : `burst-heap-${i}`, { timeout: 120_000 }).then((l) => l.release()),
  );
  const after = writeHeapSnapshot(path.join(dir, 'after.heapsnapshot'));
  await Promise.all(calls);
  const [a, b] = [summarize(before), summarize(after)];
  const rows = [...b]
    .map(([key, v]) => ({ key, count: v.count - (a.get(key)?.count ?? 0), size: v.size - (a.get(key)?.size ?? 0) }))
    .filter((r) => r.size > 0)
    .sort((x, y) => y.size - x.size);
  const total = rows.reduce((s, r) => s + r.size, 0);
  console.log(`${dist}: ${callers} callers in flight, ${(total / callers).toFixed(0)} B per caller`);
  for (const r of rows.slice(0, 25))
    console.log(`${(r.size / callers).toFixed(1).padStart(8)} B ${(r.count / callers).toFixed(2).padStart(6)} per caller  ${r.key}`);
} finally {
  await locks.close();
  client.disconnect();
  await nodes.stop();
  rmSync(dir, { recursive: true, force: true });
}
