// The built package (`npm run build`): fresh Node processes load dist/ directly and through the package name
// (a temp project whose node_modules/fencelock links to the built copy), as ESM and as CommonJS.
// Registered by test/package/consumer.test.ts on the copy it builds and packs: one build serves both (this was
// test/build.test.ts, which ran a second build of its own, in place, ~12 s of CPU).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const MAIN_EXPORTS = [
  'LockManager',
  'ManagerClosedError',
  'Lock',
  'LockReleasedError',
  'LockError',
  'InvalidArgumentError',
  'LockTimeoutError',
  'QuorumError',
  'LockLostError',
  'NodeError',
  'NodeTimeoutError',
  'scheduleSingleton',
];
const PG_EXPORTS = ['claimFence', 'fencedTransaction', 'transaction', 'fenceTableSql', 'pruneFences', 'StaleFenceError'];
const TESTING_EXPORTS = [
  'LocalRedisNode',
  'LocalRedisNodes',
  'RedisServerNotFoundError',
  'startRedisNode',
  'startRedisNodes',
  'LocalRedisCluster',
  'clusterKeySlot',
  'startRedisCluster',
];

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(cmd: string, args: string[], cwd: string, timeout = 20_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, timeout, killSignal: 'SIGKILL', maxBuffer: 10 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a script in a fresh Node and parses the JSON it prints last. */
async function node(cwd: string, type: 'module' | 'commonjs', script: string): Promise<Record<string, unknown>> {
  const r = await run(process.execPath, ['--input-type=' + type, '-e', script], cwd);
  assert.equal(r.code, 0, `node (${type}) failed:\n${r.stderr}`);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as Record<string, unknown>;
}

/** An expression for which names a module exposes, and of what type. */
const describeExports = (expr: string): string => `Object.fromEntries(Object.entries(${expr}).map(([k, v]) => [k, typeof v]))`;

/** Checks class relationships and a real lock round trip on a throw-away node, from the loaded package. */
const roundTrip = `
  const node = await testing.startRedisNode();
  try {
    const locks = new main.LockManager([node.url], { ttl: 3000, nodeTimeout: 500 });
    try {
      const lock = await locks.acquire('build-check');
      const out = {
        fence: String(lock.fence),
        fenceIsBigint: typeof lock.fence === 'bigint',
        busy: (await locks.tryAcquire('build-check')) === null,
        released: (await lock.release()).released,
      };
      let invalid = null;
      try { await locks.acquire(''); } catch (e) { invalid = { code: e.code, isLockError: e instanceof main.LockError, name: e.name }; }
      out.invalid = invalid;
      out.hierarchy = [main.QuorumError, main.LockTimeoutError, main.LockLostError, main.InvalidArgumentError].every((C) => C.prototype instanceof main.LockError) && main.LockError.prototype instanceof Error;
      console.log(JSON.stringify(out));
    } finally { await locks.close(); }
  } finally { await node.stop(); }
`;

/** The tests of the package built in `built()` (a folder with package.json, dist/ and node_modules). */
export function builtPackageTests(built: () => string): void {
  describe('built package', () => {
    let repo: string;
    let project: string;

    before(() => {
      repo = built();
      project = mkdtempSync(path.join(os.tmpdir(), 'fencelock-built-'));
      mkdirSync(path.join(project, 'node_modules'));
      symlinkSync(repo, path.join(project, 'node_modules', 'fencelock'), 'dir');
    });
    after(() => {
      if (project) rmSync(project, { recursive: true, force: true });
    });

    test('every path in package.json "exports" (and main/module/types) exists after the build', () => {
      const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
        main: string;
        module: string;
        types: string;
        exports: Record<string, string | Record<string, Record<string, string>>>;
      };
      const files: string[] = [pkg.main, pkg.module, pkg.types];
      for (const [subpath, target] of Object.entries(pkg.exports)) {
        if (typeof target === 'string') files.push(target);
        else for (const condition of Object.values(target)) files.push(...Object.values(condition));
        assert.ok(subpath === '.' || subpath.startsWith('./'));
      }
      assert.ok(files.length >= 10);
      for (const f of files) assert.ok(existsSync(path.join(repo, f)), `${f} is missing`);
      // the CJS folder is marked CommonJS, or Node would read it as ESM through "type": "module"
      assert.deepEqual(JSON.parse(readFileSync(path.join(repo, 'dist/cjs/package.json'), 'utf8')), { type: 'commonjs' });
    });

    test('dist/esm and dist/cjs load directly and expose the API', async () => {
      const esm = await node(
        repo,
        'module',
        `const m = await import(${JSON.stringify(`${repo}/dist/esm/index.js`)}); console.log(JSON.stringify(${describeExports('m')}));`,
      );
      const cjs = await node(
        repo,
        'commonjs',
        `const m = require(${JSON.stringify(`${repo}/dist/cjs/index.js`)}); console.log(JSON.stringify(${describeExports('m')}));`,
      );
      for (const exportsOf of [esm, cjs])
        for (const name of MAIN_EXPORTS) assert.equal(exportsOf[name], 'function', `${name}: ${JSON.stringify(exportsOf)}`);
    });

    test("import 'fencelock' and 'fencelock/testing' resolve through \"exports\" to the ESM build, and work", async () => {
      const names = await node(
        project,
        'module',
        `import * as main from 'fencelock'; import * as testing from 'fencelock/testing';
       const url = import.meta.resolve('fencelock');
       console.log(JSON.stringify({ url, testingUrl: import.meta.resolve('fencelock/testing'), main: ${describeExports('main')}, testing: ${describeExports('testing')} }));`,
      );
      assert.match(String(names.url), /\/dist\/esm\/index\.js$/);
      assert.match(String(names.testingUrl), /\/dist\/esm\/testing\/index\.js$/);
      for (const n of MAIN_EXPORTS) assert.equal((names.main as Record<string, string>)[n], 'function', n);
      for (const n of TESTING_EXPORTS) assert.equal((names.testing as Record<string, string>)[n], 'function', n);

      const result = await node(
        project,
        'module',
        `import * as main from 'fencelock'; import * as testing from 'fencelock/testing'; ${roundTrip}`,
      );
      assert.deepEqual(result, {
        fence: '1',
        fenceIsBigint: true,
        busy: true,
        released: 1,
        invalid: { code: 'INVALID_ARGUMENT', isLockError: true, name: 'InvalidArgumentError' },
        hierarchy: true,
      });
    });

    test("'fencelock/pg' resolves to the ESM and the CommonJS build, with no database driver of its own", async () => {
      const esm = await node(
        project,
        'module',
        `import * as pg from 'fencelock/pg'; console.log(JSON.stringify({ url: import.meta.resolve('fencelock/pg'), names: ${describeExports('pg')} }));`,
      );
      const cjs = await node(
        project,
        'commonjs',
        `const pg = require('fencelock/pg'); console.log(JSON.stringify({ url: require.resolve('fencelock/pg'), names: ${describeExports('pg')} }));`,
      );
      assert.match(String(esm.url), /\/dist\/esm\/pg\/index\.js$/);
      assert.match(String(cjs.url), /\/dist\/cjs\/pg\/index\.js$/);
      for (const n of PG_EXPORTS) {
        assert.equal((esm.names as Record<string, string>)[n], 'function', n);
        assert.equal((cjs.names as Record<string, string>)[n], 'function', n);
      }
    });

    test("require('fencelock') and require('fencelock/testing') resolve to the CommonJS build, and work", async () => {
      const names = await node(
        project,
        'commonjs',
        `const main = require('fencelock'); const testing = require('fencelock/testing');
       console.log(JSON.stringify({ path: require.resolve('fencelock'), testingPath: require.resolve('fencelock/testing'), main: ${describeExports('main')}, testing: ${describeExports('testing')} }));`,
      );
      assert.match(String(names.path), /\/dist\/cjs\/index\.js$/);
      assert.match(String(names.testingPath), /\/dist\/cjs\/testing\/index\.js$/);
      for (const n of MAIN_EXPORTS) assert.equal((names.main as Record<string, string>)[n], 'function', n);
      for (const n of TESTING_EXPORTS) assert.equal((names.testing as Record<string, string>)[n], 'function', n);

      const result = await node(
        project,
        'commonjs',
        `const main = require('fencelock'); const testing = require('fencelock/testing'); (async () => { ${roundTrip} })().catch((e) => { console.error(e); process.exitCode = 1; });`,
      );
      assert.equal(result.fence, '1');
      assert.equal(result.released, 1);
      assert.equal(result.busy, true);
      assert.deepEqual(result.invalid, { code: 'INVALID_ARGUMENT', isLockError: true, name: 'InvalidArgumentError' });
      assert.equal(result.hierarchy, true);
    });
  });
}
