// The repository's root, for the tests that start a command in it or read its files.
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The working directory: tests run from the repository's root (`npm test`, or `node --import tsx --test <file>`
 * in a clone), as the entry points they spawn must (entry.ts). Not read off import.meta.url: `npm test` runs the
 * files' compiled copies, in .tmp/test-build/<pid>/ (scripts/test-build.mjs).
 */
export const REPO_ROOT = process.cwd();

if (!existsSync(path.join(REPO_ROOT, 'src', 'index.ts'))) {
  throw new Error(`run the tests from the repository's root: ${REPO_ROOT} has no src/index.ts`);
}
