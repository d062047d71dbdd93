// Builds ESM and CommonJS outputs with plain tsc, then marks the CJS folder as
// CommonJS so Node does not read it through the package's "type": "module".
// The Lua scripts are embedded first (scripts/embed-lua.mjs).
import { execFileSync } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';

const node = (...args) => execFileSync(process.execPath, args, { stdio: 'inherit' });

node('scripts/embed-lua.mjs');
rmSync('dist', { recursive: true, force: true });
node('node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json');
node('node_modules/typescript/bin/tsc', '-p', 'tsconfig.cjs.json');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
chmodSync('dist/esm/cli/main.js', 0o755);
