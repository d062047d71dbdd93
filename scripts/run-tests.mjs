// Runs every test/**/*.test.ts file with Node's own test runner (through tsx).
// Node 20's runner does not expand globs itself, hence this small launcher. The timeout is per file: the
// longest, test/bench/quick.test.ts, ran 167 s alone and over 280 s beside the other files in CI.
// Extra arguments are passed through, e.g. `npm run test:only -- test/redis`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => collect(join(path, name)));
}

const args = process.argv.slice(2);
const roots = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const files = (roots.length > 0 ? roots : ['test']).flatMap(collect);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
spawnSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
const result = spawnSync(
  process.execPath,
  // --test-force-exit: a file whose tests have all ended exits then. Seen in full runs only: the etcd fault
  // file's suite passed and its process then lingered until the 330 s timeout, kept alive by something in
  // the gRPC client we could not pin down. That a process ends by itself after close() is fencelock's own
  // promise, and test/process-exit.test.ts checks it (Redis, etcd, ZooKeeper) in a child that is not forced.
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', '--test-force-exit', ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
