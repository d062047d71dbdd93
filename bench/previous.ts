// The previous release of fencelock, measured in the same run as the current one so that a regression shows at a
// glance: the commit before the performance work of issue 13. Its source is taken from git (git archive) into
// .tmp/previous-<commit>/ and built there with this repository's TypeScript; the build is kept for later runs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The commit measured as "previous" (fencelock 0.1.0 + node state, before issue 13). */
export const PREVIOUS_COMMIT = 'dbb5414';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIR = join(ROOT, '.tmp', `previous-${PREVIOUS_COMMIT}`);

/** The built previous release's ESM entry point (built on first use: git and this repository's devDependencies). */
export function previousEntry(): string {
  const entry = join(DIR, 'dist', 'esm', 'index.js');
  if (existsSync(entry)) return entry;
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const files = ['src', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
  const archive = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', PREVIOUS_COMMIT, ...files], { maxBuffer: 64 << 20 });
  execFileSync('tar', ['-x', '-C', DIR], { input: archive });
  const node = (...args: string[]): void => void execFileSync(process.execPath, args, { cwd: DIR, stdio: 'inherit' });
  node('scripts/embed-lua.mjs');
  // Its imports resolve from this repository's node_modules (the folder sits inside it).
  node(join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json');
  writeFileSync(join(DIR, 'BUILT_FROM'), `${PREVIOUS_COMMIT}\n`);
  return entry;
}
