// A fresh project that installs the packed fencelock next to one client library, as a user would, but offline:
// its package-lock.json is cut from the repository's own (the client's and fencelock's dependencies, by the
// same versions and integrity hashes), so `npm ci --offline` takes every tarball from the npm cache that the
// repository's `npm ci` filled. No registry, no version drift.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** wall time, ms */
  readonly ms: number;
}

/** Runs a command to its end (killed after `timeout` ms); never rejects. */
export function run(
  cmd: string,
  args: readonly string[],
  cwd: string,
  timeout = 120_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(cmd, [...args], { cwd, env, timeout, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

const ok = (r: Run, what: string): Run => {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
};

/**
 * Builds the package (`npm run build`) in a copy of the repository's packed files (the repository's own dist/
 * is left as it is: the tests run from the sources, and a build in place would change the working tree under
 * whoever uses it) and packs it there; resolves with the tarball's path. The copy keeps its dist/ for the
 * built package's tests (test/package/built-package.ts).
 */
export async function packFencelock(repo: string, dir: string): Promise<string> {
  const copy = path.join(dir, 'fencelock');
  mkdirSync(copy);
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.cjs.json', 'README.md', 'src', 'docs', 'scripts'])
    cpSync(path.join(repo, entry), path.join(copy, entry), { recursive: true });
  symlinkSync(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
  // A bound for a hang, not a wait: the build (two tsc runs, ~12 s of CPU) took 92 s of wall at a load average
  // of 23.
  ok(await run('npm', ['run', 'build'], copy, 400_000), 'npm run build');
  // prepack would build again: built above, in this copy.
  ok(await run('npm', ['pack', '--ignore-scripts', '--offline', '--pack-destination', dir], copy), 'npm pack');
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack made no tarball');
  return path.join(dir, tarball);
}

interface LockEntry {
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}

/** The lock entries of `names` and everything they need, at the paths the repository's lock has them. */
function closure(packages: Record<string, LockEntry>, names: readonly string[]): Record<string, LockEntry> {
  const out: Record<string, LockEntry> = {};
  const parent = (p: string): string => p.slice(0, Math.max(0, p.lastIndexOf('/node_modules/')));
  // Node's lookup: the nearest node_modules/<dep> from the dependent's folder up.
  const find = (from: string, dep: string): string | undefined => {
    for (let p = from; ; p = parent(p)) {
      const candidate = `${p ? `${p}/` : ''}node_modules/${dep}`;
      if (packages[candidate]) return candidate;
      if (!p) return undefined;
    }
  };
  const visit = (key: string): void => {
    if (out[key]) return;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = packages[key] as LockEntry;
    out[key] = entry as LockEntry;
    const requiredPeers = Object.keys(entry.peerDependencies ?? {}).filter((n) => !entry.peerDependenciesMeta?.[n]?.optional);
    for (const dep of [...Object.keys(entry.dependencies ?? {}), ...requiredPeers]) {
      const found = find(key, dep);
      if (!found) throw new Error(`${key} needs ${dep}, which the repository's package-lock.json does not have`);
      visit(found);
    }
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
      const found = find(key, dep);
      if (found) visit(found);
    }
  };
  for (const name of names) {
    if (!packages[`node_modules/${name}`]) throw new Error(`${name} is not in the repository's package-lock.json`);
    visit(`node_modules/${name}`);
  }
  return out;
}

/** Makes `dir` a project depending on the tarball and `deps` (at the repository's versions), and installs it offline. */
export async function installProject(repo: string, dir: string, tarball: string, deps: readonly string[]): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const packages = (JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> })
    .packages;
  const fencelock = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as LockEntry & { license: string; bin: object };
  const spec = `file:${path.relative(dir, tarball)}`;
  const dependencies = { fencelock: spec, ...Object.fromEntries(deps.map((d) => [d, packages[`node_modules/${d}`]?.version ?? '?'])) };
  const lock = {
    name: 'consumer',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'consumer', dependencies },
      'node_modules/fencelock': {
        version: fencelock.version,
        resolved: spec,
        integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
        license: fencelock.license,
        dependencies: fencelock.dependencies,
        bin: fencelock.bin,
        peerDependencies: fencelock.peerDependencies,
        peerDependenciesMeta: fencelock.peerDependenciesMeta,
      },
      ...closure(packages, [...deps, ...Object.keys(fencelock.dependencies ?? {})]),
    },
  };
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, dependencies }, null, 2));
  writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  ok(await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], dir, 180_000), `npm ci in ${path.basename(dir)}`);
}
