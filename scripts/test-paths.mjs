// Where a test run's compiled copy of the repository lives (scripts/test-build.mjs), and how its files map to their
// sources: the runner runs the copies, and the recorders (test-durations.mjs, test-failures.mjs) name the sources.
// Apart from test-build.mjs, so that the reporters do not load the TypeScript compiler.
import { join, relative, sep } from 'node:path';

/** Each run's own folder is `.tmp/test-build/<pid>`: two runs in one checkout must not empty each other's. */
export const PARENT = join('.tmp', 'test-build');

/** A file's place in a run's folder: `test/x.test.ts` → `<build>/test/x.test.js`. */
export function compiledPath(build, file) {
  return join(build, file.replace(/\.ts$/, '.js'));
}

/**
 * The source of a file the runner names (absolute or relative), from the repository's root: `test/x.test.ts` for
 * its compiled copy in any run's folder, the path itself for anything else.
 */
export function sourcePath(file) {
  const path = relative(process.cwd(), file);
  if (!path.startsWith(PARENT + sep)) return path;
  // past `.tmp/test-build/<pid>/`
  return path
    .slice(PARENT.length + 1)
    .split(sep)
    .slice(1)
    .join(sep)
    .replace(/\.js$/, '.ts');
}
