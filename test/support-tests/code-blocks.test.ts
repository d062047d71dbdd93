// The doctests' own machinery: the extractor reads fences and fragment markers as the convention says, the
// program builder maps fencelock's specifiers and keeps imports first, and the per-doc runner fails a block
// that throws or leaves a client open (so a green doctest means something).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startRedisNode } from '../../src/testing/index.js';
import { runTs } from '../support/child.js';
import { codeBlocks } from '../support/code-blocks.js';
import { splitImports } from '../docs/block-program.js';
import { REPO_ROOT } from '../support/repo.js';

const ROOT = REPO_ROOT;
mkdirSync(join(ROOT, '.tmp'), { recursive: true }); // git-ignored; absent in a fresh clone

test('codeBlocks: languages, lines, fragment markers (with and without a runnable file) and malformed ones', () => {
  const dir = mkdtempSync(join(ROOT, '.tmp', 'blocks-'));
  try {
    mkdirSync(join(dir, 'docs'));
    const md = [
      '# t',
      '```ts',
      'const a = 1;',
      '```',
      '<!-- fragment: needs your db; runnable: examples/x.ts -->',
      '```typescript',
      'db.query();',
      '```',
      '<!-- fragment: a type shape -->',
      '````js',
      '```',
      '````',
      '<!-- fragment -->',
      '```ts',
      'x',
      '```',
      '```sh',
      'echo hi',
      '```',
    ].join('\n');
    writeFileSync(join(dir, 'docs', 'a.md'), md);
    const blocks = codeBlocks(dir, 'docs/a.md');
    assert.deepEqual(
      blocks.map((b) => [b.line, b.lang, b.code, b.fragment?.reason, b.fragment?.runnable, b.badMarker !== undefined]),
      [
        [2, 'ts', 'const a = 1;', undefined, undefined, false],
        [6, 'typescript', 'db.query();', 'needs your db', 'examples/x.ts', false],
        [10, 'js', '```', 'a type shape', undefined, false],
        [14, 'ts', 'x', undefined, undefined, true],
        [17, 'sh', 'echo hi', undefined, undefined, false],
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('splitImports: imports first, multi-line ones whole, fencelock entry points mapped to src/', () => {
  const code = [
    "import { Redis } from 'ioredis';",
    'import {',
    '  LockManager,',
    "} from 'fencelock';",
    "import { fencedTransaction } from 'fencelock/pg';",
    'const x = 1;',
  ].join('\n');
  const { imports, body } = splitImports(code, '../src');
  assert.equal(
    imports,
    [
      "import { Redis } from 'ioredis';",
      'import {',
      '  LockManager,',
      "} from '../src/index.js';",
      "import { fencedTransaction } from '../src/pg/index.js';",
    ].join('\n'),
  );
  assert.equal(body, 'const x = 1;');
});

test('run-doc-blocks: a block that leaves a client open fails, naming it; one that throws fails; clean ones pass', async () => {
  const dir = mkdtempSync(join(ROOT, '.tmp', 'blocks-'));
  const node = await startRedisNode();
  try {
    const clean = join(dir, 'clean.ts');
    const leaky = join(dir, 'leaky.ts');
    const throws = join(dir, 'throws.ts');
    writeFileSync(
      clean,
      `import { Redis } from 'ioredis';\nconst c = new Redis('${node.url}');\nawait c.ping();\nc.disconnect();\nexport {};\n`,
    );
    writeFileSync(leaky, `import { Redis } from 'ioredis';\nconst c = new Redis('${node.url}');\nawait c.ping();\nexport {};\n`);
    writeFileSync(throws, `throw new Error('boom');\nexport {};\n`);
    const ok = await runTs(['test/fixtures/run-doc-blocks.ts', clean], 60_000);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, `::block ${clean} ok\n`);
    const leak = await runTs(['test/fixtures/run-doc-blocks.ts', clean, leaky], 60_000);
    assert.equal(leak.code, 1);
    assert.match(leak.stderr, /leaky\.ts left open: TCP/);
    const thrown = await runTs(['test/fixtures/run-doc-blocks.ts', throws, clean], 60_000);
    assert.equal(thrown.code, 1);
    assert.match(thrown.stderr, /boom/);
    assert.doesNotMatch(thrown.stdout, /clean\.ts ok/, 'it stops at the first failure');
  } finally {
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
