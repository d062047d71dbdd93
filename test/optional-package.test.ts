// A client library that is not installed is a setup error, found at once (issue 24): the library's calls reject
// with MissingPackageError naming the package, long before their timeout; the CLI runs --help without any
// client library and exits 2 at once, naming the package, where a command needs one. The packages are hidden
// from a child process by a resolve hook (test/support/without-packages.ts); test/package/consumer.test.ts
// does the same with projects that really lack them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

const CLIENTS = 'ioredis,etcd3,node-zookeeper-client';
/** The calls below would wait 30 s (their timeout) if a missing package looked like a store that is down. */
const AT_ONCE_MS = 10_000;

function child(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--import', './test/support/without-packages.ts', ...args],
      { env: { ...process.env, FENCELOCK_WITHOUT: CLIENTS }, timeout: 60_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr, ms: performance.now() - started });
      },
    );
  });
}

const SCRIPT = `
import { LockManager, MissingPackageError } from './src/index.ts';
const results = [];
for (const [input, packageName] of [['etcd://127.0.0.1:1', 'etcd3'], ['zk://127.0.0.1:1', 'node-zookeeper-client'], [['redis://127.0.0.1:1', 'redis://127.0.0.1:2'], 'ioredis']]) {
  const locks = new LockManager(input, { acquireTimeout: 30_000 });
  const calls = {
    acquire: () => locks.acquire('r'),
    tryAcquire: () => locks.tryAcquire('r'),
    withLock: () => locks.withLock('r', async () => undefined),
    inspect: () => locks.inspect('r'),
    semaphore: () => locks.semaphore('s', { limit: 2 }).acquire(),
    readWriteLock: () => locks.readWriteLock('w').write(),
  };
  for (const [call, run] of Object.entries(calls)) {
    const started = performance.now();
    const error = await run().then(() => undefined, (e) => e);
    results.push({ input, call, packageName, got: error instanceof MissingPackageError ? error.packageName : String(error), code: error?.code, message: error?.message, ms: performance.now() - started });
  }
  await locks.close();
}
console.log(JSON.stringify(results));
`;

test('every call of a manager whose URL needs a missing client library rejects at once with MissingPackageError', async () => {
  const ran = await child(['--input-type=module', '-e', SCRIPT]);
  assert.equal(ran.code, 0, ran.stderr);
  const results = JSON.parse(ran.stdout.trim().split('\n').pop() ?? '[]') as Array<{
    input: unknown;
    call: string;
    packageName: string;
    got: string;
    code: string;
    message: string;
    ms: number;
  }>;
  assert.equal(results.length, 18);
  for (const r of results) {
    const label = `${JSON.stringify(r.input)} ${r.call}`;
    assert.equal(r.got, r.packageName, `${label}: ${r.message}`);
    assert.equal(r.code, 'INVALID_ARGUMENT', label);
    assert.match(r.message, new RegExp(`needs the ${r.packageName} package.*npm install ${r.packageName}$`), label);
    assert.ok(r.ms < AT_ONCE_MS, `${label}: ${Math.round(r.ms)} ms`);
  }
});

test('the CLI without any client library: --help runs, and a command that needs one exits 2 at once naming it', async () => {
  const help = await child(['src/cli/main.ts', '--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: fencelock/);

  const cases: Array<[string[], RegExp]> = [
    [['run', '--etcd', 'etcd://127.0.0.1:1', '--timeout', '30000', 'r', '--', 'true'], /needs the etcd3 package/],
    [['run', '--zk', 'zk://127.0.0.1:1', '--timeout', '30000', 'r', '--', 'true'], /needs the node-zookeeper-client package/],
    [['run', '--nodes', 'redis://127.0.0.1:1', '--timeout', '30000', 'r', '--', 'true'], /needs the ioredis package/],
    [['inspect', '--etcd', 'etcd://127.0.0.1:1', 'r'], /needs the etcd3 package/],
    [['demo', '--backend', 'etcd'], /the demo \(--backend etcd\) needs the packages ioredis and etcd3.*npm install ioredis etcd3/],
    [['demo', '--backend', 'zookeeper', '--scenario', 'orders'], /needs the node-zookeeper-client package/],
    [['demo'], /the demo \(--backend redis\) needs the ioredis package/],
  ];
  for (const [args, message] of cases) {
    const ran = await child(['src/cli/main.ts', ...args]);
    assert.equal(ran.code, 2, `${args.join(' ')}: ${ran.stderr}`);
    assert.match(ran.stderr, message, args.join(' '));
    assert.ok(ran.ms < AT_ONCE_MS, `${args.join(' ')}: ${Math.round(ran.ms)} ms`);
  }
});
