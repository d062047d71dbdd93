// The repository's TypeScript, compiled once for a test run: the test files themselves and everything they load
// or spawn (the CLI, fixtures, workers, the chaos runner). Through tsx, each test file's process and each child
// it spawns paid tsx's loader again: ~0.5 s of CPU per test file (26 files of test/redis and test/lock-manager:
// 62.4 s of CPU through tsx, 49.9 s compiled, 2026-11-28) and ~0.3 s per child, on a suite that is CPU-bound on
// this 2-core machine. scripts/run-tests.mjs calls this before the files start, runs the compiled test files,
// and hands them the folder in FENCELOCK_TEST_BUILD; test/support/entry.ts's `tsEntry()` runs spawned entry
// points from it then, from the sources through tsx otherwise (a file run on its own).
//
// Each file is transpiled on its own (TypeScript's transpileModule, the repository's compiler options:
// isolatedModules is on, so a file needs no other to compile), no type check (`npm run typecheck` does that).
// Each carries an inline source map to its source, so that with --enable-source-maps a stack names the .ts
// file and line (the folder is gone when the run ends). The folder mirrors the repository (src/, test/, bench/
// and examples/, which test files import, with their other files, e.g. examples/orders/schema.sql), with a copy
// of package.json, so that relative paths, the CLI's version lookup and "type": "module" hold as in the
// sources; packages resolve from the repository's node_modules, two folders up. The examples' own tests still
// run them through tsx, as their readers do.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';
import { PARENT } from './test-paths.mjs';

const ROOTS = ['src', 'test', 'bench', 'examples'];
/** Not part of any program: the benchmark's recorded results. */
const SKIPPED = [join('bench', 'results')];

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return SKIPPED.includes(path) ? [] : files(path);
    return e.isFile() && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Compiles src/, test/, bench/ and examples/ into this process's folder; returns the folder (absolute). Folders of runs that ended go. */
export function buildForTests() {
  mkdirSync(PARENT, { recursive: true });
  for (const pid of readdirSync(PARENT)) if (!alive(Number(pid))) rmSync(join(PARENT, pid), { recursive: true, force: true });
  const out = resolve(PARENT, String(process.pid));
  const { options, errors } = ts.convertCompilerOptionsFromJson(JSON.parse(readFileSync('tsconfig.json', 'utf8')).compilerOptions, '.');
  if (errors.length > 0) throw new Error(ts.flattenDiagnosticMessageText(errors[0].messageText, '\n'));
  // ESM out, as Node reads these files ("type": "module"); transpileModule cannot look that up itself.
  const compilerOptions = { ...options, module: ts.ModuleKind.ES2022, noEmit: false, sourceMap: false, inlineSourceMap: true };
  rmSync(out, { recursive: true, force: true });
  for (const file of ROOTS.flatMap(files)) {
    const target = join(out, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    if (!file.endsWith('.ts')) {
      copyFileSync(file, target);
      continue;
    }
    // The map names the source by its absolute path: a stack then shows the file as it is in the repository.
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { ...compilerOptions, sourceRoot: resolve(dirname(file)) },
      fileName: resolve(file),
    });
    writeFileSync(target, outputText);
  }
  writeFileSync(join(out, 'package.json'), readFileSync('package.json'));
  return out;
}

/** Removes the folder buildForTests made. */
export function removeTestBuild(out) {
  rmSync(out, { recursive: true, force: true });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}
