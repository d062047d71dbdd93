// The package as a user installs it: packed, installed into fresh projects that each have one client library
// (ioredis, redis, etcd3, node-zookeeper-client) and none of the others. In each: the declarations type-check
// as ESM and CommonJS (strict, nodenext, skipLibCheck off), a program takes a lock, the CLI runs, and asking for
// a store whose library is missing fails at once, naming the package (issue 24, points 1-4). The package built
// for the tarball is also loaded from its dist/ and through its name, as ESM and CommonJS (built-package.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEtcdCluster, startRedisNode, startZooKeeperEnsemble } from '../../src/testing/index.js';
import { requireEtcd, requireZooKeeper } from '../support/optional.js';
import { builtPackageTests } from './built-package.js';
import { installProject, packFencelock, run, type Run } from './consumer-project.js';
import { CONSUMERS, program, TSCONFIG, type Consumer } from './consumer-sources.js';
import { REPO_ROOT } from '../support/repo.js';

const repo = REPO_ROOT;
const tsc = path.join(repo, 'node_modules/typescript/bin/tsc');
/** A missing library must end the call this fast; the calls wait up to 30 s otherwise (their timeout). */
const AT_ONCE_MS = 10_000;

const skip: Record<Consumer['client'], false | string> = {
  ioredis: false,
  redis: false,
  etcd3: requireEtcd('the etcd3 consumer'),
  'node-zookeeper-client': requireZooKeeper('the node-zookeeper-client consumer'),
};

describe('the packed package, installed next to one client library', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fencelock-consumer-'));
  const stops: Array<() => Promise<void>> = [];
  const urls: Partial<Record<Consumer['client'], string>> = {};
  /** each project's type check (installed and compiled in before(), all at once) */
  const typeChecks = new Map<Consumer['client'], Run>();

  before(async () => {
    const servers = (async () => {
      const redis = await startRedisNode();
      stops.push(() => redis.stop());
      urls.ioredis = urls.redis = redis.url;
      if (!skip.etcd3) {
        const etcd = await startEtcdCluster({ members: 1 });
        stops.push(() => etcd.stop());
        urls.etcd3 = etcd.url;
      }
      if (!skip['node-zookeeper-client']) {
        const zk = await startZooKeeperEnsemble({ servers: 1 });
        stops.push(() => zk.stop());
        urls['node-zookeeper-client'] = zk.url;
      }
    })();
    const tarball = await packFencelock(repo, dir);
    await Promise.all([
      servers,
      ...CONSUMERS.filter((c) => !skip[c.client]).map(async (c) => {
        const project = path.join(dir, c.client);
        await installProject(repo, project, tarball, [c.client, '@types/node']);
        writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
        writeFileSync(path.join(project, 'program.mts'), program(c));
        writeFileSync(path.join(project, 'program.cts'), program(c));
        typeChecks.set(c.client, await run(process.execPath, [tsc, '-p', '.'], project, 400_000));
      }),
    ]);
  });

  after(async () => {
    await Promise.all(stops.map((stop) => stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  // The installed command, as npm links it (node_modules/.bin); npx itself is tried once, for --help (it costs a second a call).
  const fencelock = (c: Consumer, ...args: string[]): Promise<Run> =>
    run(path.join(dir, c.client, 'node_modules/.bin/fencelock'), args, path.join(dir, c.client), 60_000);

  test('no declaration file in dist/esm or dist/cjs imports an optional package', () => {
    const dist = path.join(dir, 'fencelock', 'dist');
    const optional = /(?:from\s*|import\()['"](ioredis|redis|etcd3|node-zookeeper-client|pg|@electric-sql\/[\w-]+|@types\/[\w-]+)['"]/;
    const declarations = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.d.ts'));
    assert.ok(declarations.length > 50, `the declarations are found (${declarations.length})`);
    const importing = declarations.filter((f) => optional.test(readFileSync(path.join(dist, f), 'utf8')));
    assert.deepEqual(importing, []);
  });

  // The copy that packFencelock built, with its dist/ (and the repository's node_modules, linked).
  builtPackageTests(() => path.join(dir, 'fencelock'));

  for (const c of CONSUMERS) {
    test(`with only ${c.client}`, { skip: skip[c.client] }, async () => {
      const project = path.join(dir, c.client);
      const checked = typeChecks.get(c.client);
      assert.equal(checked?.code, 0, `tsc (strict, nodenext, skipLibCheck false) failed:\n${checked?.stdout}${checked?.stderr}`);

      for (const file of ['out/program.mjs', 'out/program.cjs']) {
        const env = { ...process.env, STORE_URL: urls[c.client], RESOURCE: `consumer:${c.client}:${file}` };
        const ran = await run(process.execPath, [file], project, 60_000, env);
        assert.equal(ran.code, 0, `${file} failed:\n${ran.stderr}`);
        const out = JSON.parse(ran.stdout.trim().split('\n').pop() ?? '') as {
          fence: string;
          missing: { packageName: string | null; code?: string; message?: string; ms: number };
        };
        assert.ok(BigInt(out.fence) > 0n, `${file}: a fence from the live store`);
        assert.equal(out.missing.packageName, c.missing.packageName, `${file}: MissingPackageError names it: ${out.missing.message}`);
        assert.equal(out.missing.code, 'INVALID_ARGUMENT');
        assert.match(out.missing.message ?? '', new RegExp(`npm install ${c.missing.packageName}`));
        assert.ok(out.missing.ms < AT_ONCE_MS, `${file}: failed after ${out.missing.ms} ms, not at once`);
      }

      const help = await run('npx', ['--no-install', 'fencelock', '--help'], project, 60_000);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^Usage: fencelock/);

      // The CLI's redis:// URLs are ioredis connections: without ioredis, `run --nodes` is a setup error.
      const store = { ioredis: '--nodes', redis: '--nodes', etcd3: '--etcd', 'node-zookeeper-client': '--zk' }[c.client];
      const held = await fencelock(
        c,
        'run',
        store,
        urls[c.client] as string,
        'consumer:cli',
        '--',
        process.execPath,
        '-e',
        'process.exit(0)',
      );
      if (c.client === 'redis') {
        assert.equal(held.code, 2, `run --nodes without ioredis: ${held.stderr}`);
        assert.match(held.stderr, /needs the ioredis package/);
      } else {
        assert.equal(held.code, 0, `fencelock run ${store}: ${held.stderr}`);
      }

      const elsewhere = {
        ioredis: ['--etcd', 'etcd3'],
        redis: ['--zk', 'node-zookeeper-client'],
        etcd3: ['--zk', 'node-zookeeper-client'],
        'node-zookeeper-client': ['--etcd', 'etcd3'],
      }[c.client];
      const [flag, lacking] = elsewhere as [string, string];
      const target = flag === '--etcd' ? 'etcd://127.0.0.1:1' : 'zk://127.0.0.1:1';
      const missing = await fencelock(c, 'run', flag, target, '--timeout', '30000', 'consumer:cli', '--', process.execPath, '-e', '0');
      assert.equal(missing.code, 2, `run ${flag} without ${lacking}: ${missing.stderr}`);
      assert.match(missing.stderr, new RegExp(`needs the ${lacking} package`));
      assert.ok(missing.ms < AT_ONCE_MS, `run ${flag} without ${lacking} took ${Math.round(missing.ms)} ms`);

      // The demo checks its packages before it starts anything (the stock scenario keeps its stock on Redis).
      const backend = c.client === 'ioredis' ? 'etcd' : 'zookeeper';
      const demo = await fencelock(c, 'demo', '--backend', backend, '--json');
      assert.equal(demo.code, 2, `demo --backend ${backend}: ${demo.stderr}`);
      assert.match(
        demo.stderr,
        c.client === 'ioredis' ? /needs the etcd3 package/ : /needs the (packages ioredis and node-zookeeper-client|ioredis package)/,
      );
      assert.ok(demo.ms < AT_ONCE_MS, `demo --backend ${backend} took ${Math.round(demo.ms)} ms`);
    });
  }
});
