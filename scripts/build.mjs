// Builds ESM and CommonJS outputs with plain tsc, then marks the CJS folder as
// CommonJS so Node does not read it through the package's "type": "module".
// The Lua scripts are embedded first (scripts/embed-lua.mjs).
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const node = (...args) => execFileSync(process.execPath, args, { stdio: 'inherit' });

node('scripts/embed-lua.mjs');
rmSync('dist', { recursive: true, force: true });
node('node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json');
node('node_modules/typescript/bin/tsc', '-p', 'tsconfig.cjs.json');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
chmodSync('dist/esm/cli/main.js', 0o755);

// The CLI is a command, not an import path (package.json "exports" has none for it): its declarations would
// only be files that import the demo's optional packages (ioredis, pg) for a consumer's type check to trip on.
for (const file of readdirSync('dist/esm/cli', { recursive: true, encoding: 'utf8' }))
  if (file.endsWith('.d.ts')) rmSync(join('dist/esm/cli', file));
