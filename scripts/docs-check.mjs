// `npm test` runs this: the API reference (docs/api/, made by `npm run docs` with TypeDoc) must build
// without a warning (every public export documented, no broken link) and match what is committed, so it
// cannot rot: after changing a TSDoc comment, run `npm run docs` and commit docs/api/.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

spawnSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
const out = mkdtempSync(join(tmpdir(), 'fencelock-api-'));
try {
  const run = spawnSync(process.execPath, ['node_modules/typedoc/bin/typedoc', '--out', out, '--logLevel', 'Warn'], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
  const files = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
  const fresh = new Map(files(out).map((f) => [relative(out, f), readFileSync(f, 'utf8')]));
  const committed = new Map(files('docs/api').map((f) => [relative('docs/api', f), readFileSync(f, 'utf8')]));
  const stale = [...new Set([...fresh.keys(), ...committed.keys()])].filter((f) => fresh.get(f) !== committed.get(f));
  if (stale.length > 0) {
    console.error(
      `docs/api is out of date (${stale.length} files differ, e.g. ${stale.slice(0, 3).join(', ')}): run \`npm run docs\` and commit docs/api/`,
    );
    process.exit(1);
  }
  console.log(`docs/api: up to date (${fresh.size} files), no TypeDoc warnings`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
