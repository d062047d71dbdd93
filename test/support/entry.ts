// How the tests start a TypeScript entry point of the repository in a child process (imports nothing of the
// repository, so that workers and fixtures can use it too).
import path from 'node:path';

/**
 * Node's arguments to run a TypeScript file of the repository (`src/cli/main.ts`, a fixture, a worker; a path
 * from the repository's root, which must be the child's working directory): its copy compiled for this test
 * run when scripts/run-tests.mjs made one (FENCELOCK_TEST_BUILD, scripts/test-build.mjs), the file itself
 * through tsx otherwise. The same code either way; the copy spares each child tsx's loader (~0.3 s of CPU).
 */
export function tsEntry(file: string): string[] {
  const build = process.env.FENCELOCK_TEST_BUILD;
  if (build) return [path.join(build, file.replace(/\.ts$/, '.js'))];
  return ['--import', 'tsx', file];
}
