// The layers of src/ stay layered: the algorithm (and the client adapters below it) wins grants and never
// reaches up to the held-lock layer (lock.ts, hold.ts), the manager or the primitives; and no module imports
// itself back through others (a cycle).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve('src');

/** Every .ts file under src/, as a path relative to src/ (generated Lua included: it imports nothing). */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [path.relative(SRC, full)] : [];
  });
}

/** The src/ files a file imports (relative imports only; `import type` included: it is a dependency too). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  const found = [...text.matchAll(/^\s*(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm)].map((m) => m[1] as string);
  return found.map((spec) => path.relative(SRC, path.resolve(path.dirname(path.join(SRC, file)), spec)).replace(/\.js$/, '.ts'));
}

const files = sources();
const graph = new Map(files.map((f) => [f, importsOf(f)]));

test('the algorithm and the adapters never import the layers above them', () => {
  const below = files.filter((f) => f.startsWith(`algorithm${path.sep}`) || f.startsWith(`adapters${path.sep}`));
  assert.ok(below.length > 10, 'the algorithm and adapter files are found');
  const above = (f: string): boolean =>
    ['lock.ts', 'hold.ts', 'lock-manager.ts', 'index.ts'].includes(f) || /^(semaphore|rwlock|cli)[/\\]/.test(f);
  const upward = below.flatMap((f) => (graph.get(f) ?? []).filter(above).map((to) => `${f} -> ${to}`));
  assert.deepEqual(upward, []);
});

test('no import cycles in src/', () => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (f: string, trail: string[]): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...trail.slice(trail.indexOf(f)), f].join(' -> '));
      return;
    }
    state.set(f, 'open');
    for (const to of graph.get(f) ?? []) if (graph.has(to)) visit(to, [...trail, f]);
    state.set(f, 'done');
  };
  for (const f of files) visit(f, []);
  assert.deepEqual(cycles, []);
});
