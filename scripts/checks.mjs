// `npm test`'s checks before the suite: `npm run typecheck`, `lint` and `docs:check`, at once rather than one
// after the other (about 10 s instead of 20 on a 2-core machine). Each one's output is printed whole when it
// ends, in this order, so they do not interleave; any failure fails `npm test` before the suite starts.
import { spawn, spawnSync } from 'node:child_process';

const CHECKS = ['typecheck', 'lint', 'docs:check'];

// Each check embeds the Lua scripts first; doing it once here, before they start, means none of them writes
// src/redis/scripts/lua.generated.ts while another reads it (embed-lua.mjs writes only when it changed).
const embed = spawnSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
if (embed.status !== 0) process.exit(embed.status ?? 1);

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const runs = CHECKS.map(
  (name) =>
    new Promise((resolve) => {
      const child = spawn(npm, ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      child.on('error', (error) => resolve({ name, code: 1, output: `${output}${error.message}\n` }));
      child.on('close', (code) => resolve({ name, code: code ?? 1, output }));
    }),
);
let failed = false;
for (const { name, code, output } of await Promise.all(runs)) {
  console.log(`> npm run ${name}: ${code === 0 ? 'ok' : `failed (exit ${code})`}`);
  if (output.trim()) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  if (code !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
