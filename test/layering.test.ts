// The layers of src/ stay layered: a backend (redis/, etcd/, zookeeper/) wins grants and never reaches up to the
// held-lock layer (lock.ts, hold.ts), the manager or the primitives; what is above the backends reaches them
// only through backend.ts and the one place that picks a backend (backends.ts), so a new backend needs no
// `if (etcd)` anywhere above it; and no module imports itself back through others (a cycle).
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

const BACKENDS = ['redis', 'etcd', 'zookeeper'];
const inBackend = (f: string): boolean => BACKENDS.some((b) => f.startsWith(`${b}${path.sep}`));

test('the backends never import the layers above them', () => {
  const below = files.filter(inBackend);
  assert.ok(below.length > 20, 'the backend files are found');
  const above = (f: string): boolean =>
    ['lock.ts', 'hold.ts', 'lock-manager.ts', 'index.ts'].includes(f) || /^(semaphore|rwlock|cli)[/\\]/.test(f);
  const upward = below.flatMap((f) => (graph.get(f) ?? []).filter(above).map((to) => `${f} -> ${to}`));
  assert.deepEqual(upward, []);
});

test('above the backends, only backends.ts (which picks one) imports from inside a backend', () => {
  const above = files.filter((f) => !inBackend(f) && f !== 'backends.ts' && !f.startsWith(`testing${path.sep}`));
  // A backend's entry point is fine: the manager's signature (what it accepts), the CLI's URL checks.
  const entryPoints = BACKENDS.map((b) => path.join(b, 'index.ts'));
  const reaching = above.flatMap((f) =>
    (graph.get(f) ?? []).filter((to) => inBackend(to) && !entryPoints.includes(to)).map((to) => `${f} -> ${to}`),
  );
  assert.deepEqual(reaching, []);
});

test('the backends never import each other: each reads top to bottom on its own', () => {
  const across = files
    .filter(inBackend)
    .flatMap((f) =>
      (graph.get(f) ?? []).filter((to) => inBackend(to) && to.split(path.sep)[0] !== f.split(path.sep)[0]).map((to) => `${f} -> ${to}`),
    );
  assert.deepEqual(across, []);
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
