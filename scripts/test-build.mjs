// The sources, compiled once for a test run: test files spawn the CLI (and a few other entry points) as child
// processes, dozens of them, and each `node --import tsx file.ts` paid tsx's loader again (~0.3 s of CPU and
// ~1 s of wall on this 2-core machine under load, against ~0.1 s for plain JavaScript). scripts/run-tests.mjs
// calls this before the test files start and hands them the folder in FENCELOCK_TEST_BUILD; test/support/
// child.ts's `entry()` runs from it then, from the sources through tsx otherwise (a file run on its own).
//
// Each file is transpiled on its own (TypeScript's transpileModule, the repository's compiler options:
// isolatedModules is on, so a file needs no other to compile), no type check (`npm run typecheck` does that).
// The folder mirrors the repository (src/, and test/'s helpers, fixtures and chaos runner: not its *.test.ts
// files, which the runner loads through tsx), with a copy of package.json, so that relative paths, the CLI's
// version lookup and "type": "module" hold as in the sources. The examples stay on tsx, as their readers run them.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';

/** Each run's own folder (`.tmp/test-build/<pid>`): two runs in one checkout must not empty each other's. */
const PARENT = '.tmp/test-build';
const ROOTS = ['src', 'test'];

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Compiles src/ and test/ into this process's folder; returns the folder (absolute). Folders of runs that ended go. */
export function buildForTests() {
  mkdirSync(PARENT, { recursive: true });
  for (const pid of readdirSync(PARENT)) if (!alive(Number(pid))) rmSync(join(PARENT, pid), { recursive: true, force: true });
  const out = resolve(PARENT, String(process.pid));
  const { options, errors } = ts.convertCompilerOptionsFromJson(JSON.parse(readFileSync('tsconfig.json', 'utf8')).compilerOptions, '.');
  if (errors.length > 0) throw new Error(ts.flattenDiagnosticMessageText(errors[0].messageText, '\n'));
  // ESM out, as Node reads these files ("type": "module"); transpileModule cannot look that up itself.
  const compilerOptions = { ...options, module: ts.ModuleKind.ES2022, noEmit: false };
  rmSync(out, { recursive: true, force: true });
  for (const file of ROOTS.flatMap(sources)) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
    const target = join(out, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
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
