// Docs that cannot drift: every TypeScript/JavaScript block in README.md and docs/*.md runs here, each in a
// child process against real servers (Redis nodes and an embedded PostgreSQL, started once), with only what
// the text calls the reader's own stubbed (test/docs/block-setups.ts); it must exit by itself with 0. A block
// that is not a whole program carries a fragment marker instead, naming a tested file in examples/ that has
// the complete version (or saying why none is useful).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { LockManager } from '../../src/index.js';
import { startRedisNodes, type LocalRedisNodes } from '../../src/testing/index.js';
import { runTs } from '../support/child.js';
import { codeBlocks, docFiles, isExecuted, type CodeBlock } from '../support/code-blocks.js';
import { databaseUrl, postgresUp, startEmbeddedPostgres } from '../support/postgres.js';
import { blockProgram } from './block-program.js';
import { SETUPS, type BlockSetup } from './block-setups.js';
import { REPO_ROOT } from '../support/repo.js';

const ROOT = REPO_ROOT;
/** Where the programs are written (git- and lint-ignored), and src/ as seen from there. */
const OUT = join(ROOT, '.tmp', 'doctest');
const SRC_FROM_OUT = '../../src';
/** Per block: servers are up already, so seconds; the limit only stops a block that never exits. */
const BLOCK_TIMEOUT = 30_000;

const docs = docFiles(ROOT).map((doc) => ({ doc, blocks: codeBlocks(ROOT, doc) }));
const executed = docs.flatMap(({ blocks }) => blocks.filter(isExecuted));
/**
 * The PostgreSQL the blocks' `db` and `pool` use: the server at DATABASE_URL when one answers (CI runs one), in
 * a schema of its own that is dropped afterwards; else the embedded one (PGlite: nothing to install, but its
 * start-up costs about 10 s of CPU).
 */
async function postgres(): Promise<{ url: string; close(): Promise<void> }> {
  if (!(await postgresUp())) return startEmbeddedPostgres();
  const schema = `doctest_${process.pid}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    close: async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    },
  };
}

const setupOf = (b: CodeBlock): BlockSetup | undefined => SETUPS.find((s) => s.doc === b.doc && b.code.includes(s.contains));
/** Every block that runs, with its index in its doc's blocks. */
const runnable = docs.flatMap(({ doc, blocks }) =>
  blocks.flatMap((block, i) => (isExecuted(block) && !block.fragment ? [{ doc, blocks, block, i, setup: setupOf(block) }] : [])),
);
/** Writes the program of `blocks[i]` of `doc` into OUT; returns its path. */
function writeProgram(doc: string, blocks: readonly CodeBlock[], i: number, setup: BlockSetup | undefined): string {
  const file = join(OUT, `${doc.replace(/[/.]/g, '_')}-${blocks[i]!.line}.ts`);
  writeFileSync(file, blockProgram(blocks[i]!, setup, blocks.slice(0, i), SRC_FROM_OUT));
  return file;
}
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

test('docs code blocks: every fragment marker gives a reason, and its runnable file exists and has a test', () => {
  const tests = readdirSync(join(ROOT, 'test/examples')).map((f) => readFileSync(join(ROOT, 'test/examples', f), 'utf8'));
  const problems: string[] = [];
  for (const b of docs.flatMap((d) => d.blocks)) {
    const at = `${b.doc}:${b.line}`;
    if (b.badMarker) problems.push(`${at}: marker does not read <!-- fragment: <reason>; runnable: examples/<file> -->: ${b.badMarker}`);
    if (!b.fragment) continue;
    if (!isExecuted(b)) problems.push(`${at}: a fragment marker on a ${b.lang || 'plain'} block, which never runs anyway`);
    const file = b.fragment.runnable;
    if (file === undefined) continue;
    if (!file.startsWith('examples/')) problems.push(`${at}: the runnable version must live in examples/, not ${file}`);
    else if (!existsSync(join(ROOT, file))) problems.push(`${at}: ${file} does not exist`);
    else if (!tests.some((t) => t.includes(file.replace(/\.ts$/, '')))) problems.push(`${at}: no test in test/examples/ runs ${file}`);
  }
  assert.deepEqual(problems, []);
  assert.ok(executed.length >= 20, `found ${executed.length} TypeScript/JavaScript blocks: is the extractor broken?`);
});

test('docs code blocks: each setup belongs to exactly one block that runs', () => {
  const problems: string[] = [];
  for (const s of SETUPS) {
    const blocks = executed.filter((b) => b.doc === s.doc && b.code.includes(s.contains));
    if (blocks.length !== 1) problems.push(`${s.doc} "${s.contains}": matches ${blocks.length} blocks`);
    else if (blocks[0]!.fragment) problems.push(`${s.doc}:${blocks[0]!.line}: has a setup but is marked as a fragment`);
  }
  assert.deepEqual(problems, []);
});

test("docs code blocks: the README's Lua fence check is docs/fencing.md's, which runs there", () => {
  const lua = (doc: string): string[] =>
    docs
      .find((d) => d.doc === doc)!
      .blocks.filter((b) => b.lang === 'lua')
      .map((b) => b.code);
  assert.deepEqual(lua('README.md'), lua('docs/fencing.md'));
});

test('docs code blocks type-check (strict, as the project): a renamed option or method fails here even where it would not throw', async () => {
  for (const { doc, blocks, i, setup } of runnable) writeProgram(doc, blocks, i, setup);
  writeFileSync(join(OUT, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['*.ts'] }));
  const r = await runTs(['node_modules/typescript/bin/tsc', '--noEmit', '-p', join(OUT, 'tsconfig.json')], 300_000);
  assert.equal(r.code, 0, `tsc on the blocks' programs (in ${OUT}):\n${r.stdout}${r.stderr}`);
});

describe('docs code blocks run against real servers', () => {
  let redis: LocalRedisNodes;
  let database: { url: string; close(): Promise<void> };
  let env: NodeJS.ProcessEnv;
  before(async () => {
    [redis, database] = await Promise.all([startRedisNodes(3), postgres()]);
    // NODE_TEST_CONTEXT unset: a block that uses node:test reports as a program of its own, not to this runner.
    env = { FENCELOCK_NODES: redis.urls.join(','), DATABASE_URL: database.url, NODE_TEST_CONTEXT: undefined };
  });
  after(async () => {
    await Promise.allSettled([redis?.stop(), database?.close()]);
  });

  // One process per doc runs its blocks in order (test/fixtures/run-doc-blocks.ts checks that each leaves
  // nothing open); a block that uses node:test runs alone, as the test file it shows.
  for (const { doc } of docs) {
    const runs = runnable.filter((r) => r.doc === doc);
    if (runs.length === 0) continue;
    const alone = (b: CodeBlock): boolean => /from ['"]node:test['"]/.test(b.code);
    const groups = [runs.filter((r) => !alone(r.block)), ...runs.filter((r) => alone(r.block)).map((r) => [r])].filter((g) => g.length > 0);
    for (const group of groups) {
      const lines = group.map((r) => r.block.line).join(', ');
      test(`${doc}: the blocks at lines ${lines} run, each leaving nothing open`, async () => {
        const files = group.map(({ blocks, i, setup }) => writeProgram(doc, blocks, i, setup));
        const single = group.length === 1 && alone(group[0]!.block);
        const r = await runTs(single ? files : ['test/fixtures/run-doc-blocks.ts', ...files], BLOCK_TIMEOUT * group.length, env);
        const hint =
          'an unmarked block must run (its reader-owned stubs in test/docs/block-setups.ts) or carry <!-- fragment: …; runnable: examples/… -->';
        assert.equal(r.code, 0, `${doc}: exited ${r.code} (programs in ${OUT})\n${hint}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
        if (single) return;
        // Each block's own output is what it printed before its `::block … ok` line.
        const outputs = r.stdout.split(/^::block (\S+) ok$/m);
        group.forEach(({ block, setup }, k) => {
          assert.equal(outputs[2 * k + 1], files[k], `${doc}:${block.line} reported ok`);
          if (setup?.stdout) assert.match(outputs[2 * k]!, setup.stdout, `${doc}:${block.line} printed`);
        });
      });
    }
  }

  test("README's LockInfo block names exactly the fields inspect() returns", async () => {
    const readme = docs.find((d) => d.doc === 'README.md')!.blocks;
    const block = readme.find((b) => b.fragment && /^\{\s*\n\s*resource: string;/.test(b.code));
    assert.ok(block, 'the LockInfo block is in the README');
    const [top, node] = block.code.split(/nodes: Array<\{/) as [string, string];
    const fields = (text: string): string[] => [...text.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]!).sort();
    const locks = new LockManager(redis.urls, { ttl: 5_000 });
    try {
      const info = await locks.inspect('doc:lock-info');
      assert.deepEqual([...fields(top), 'nodes'].sort(), Object.keys(info).sort());
      assert.deepEqual(fields(node), Object.keys(info.nodes[0]!).sort());
      // and every state the README lists is one the code can report
      const states = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/^- `'(\w+)'`: /gm)].map((m) => m[1]);
      const declared = /export type NodeDataState = ([^;]+);/.exec(readFileSync(join(ROOT, 'src/backend.ts'), 'utf8'))![1]!;
      assert.deepEqual(states.sort(), [...declared.matchAll(/'(\w+)'/g)].map((m) => m[1]).sort());
    } finally {
      await locks.close();
    }
  });
});
