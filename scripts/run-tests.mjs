// Runs every test/**/*.test.ts file with Node's own test runner (through tsx).
// Node 20's runner does not expand globs itself, hence this small launcher.
// Extra arguments are passed through, e.g. `npm run test:only -- test/algorithm`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => collect(join(path, name)));
}

const args = process.argv.slice(2);
const roots = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const files = (roots.length > 0 ? roots : ['test']).flatMap(collect);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
spawnSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
