#!/usr/bin/env node
// The fencelock command line: a thin layer over the public API and the test-support nodes.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { RedisServerNotFoundError } from '../testing/index.js';
import { inspect, nodesStart, release } from './commands.js';
import { runDemo, type DemoOptions } from './demo/run-demo.js';
import { CliError, parsePositiveInt, parseUrls } from './output.js';

/** The package's version, found from src/cli (sources) or dist/esm/cli (build) alike. */
function packageVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'fencelock' && pkg.version) return pkg.version;
    } catch {
      // not at this level
    }
  }
  return 'unknown';
}
const version = packageVersion();

/** Exit codes: 0 ok, 1 a failed operation or invariant, 2 bad usage. */
export async function main(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = new Command('fencelock')
    .description('Distributed locks on Redis: inspect and release locks, run local nodes, watch the demo.')
    .version(version)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text) })
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('demo')
    .description('stock deduction by worker processes under fencelock, with injected faults and a verdict')
    .option('--nodes <urls>', 'comma-separated redis:// URLs of lock nodes (default: start 5 local nodes)', parseUrls('--nodes'))
    .option('--storage <url>', 'redis:// URL of the storage node (default: start a local one)', (v) => parseUrls('--storage')(v)[0])
    .addOption(new Option('--workers <n>', 'worker processes').default(8).argParser(parsePositiveInt('--workers', 64)))
    .addOption(new Option('--stock <n>', 'units to sell').default(500).argParser(parsePositiveInt('--stock', 1_000_000)))
    .addOption(new Option('--ttl <ms>', 'lock lease in ms').default(1_000).argParser(parsePositiveInt('--ttl', 600_000)))
    .addOption(new Option('--seed <n>', 'seed for the chaos choices').default(1).argParser(parsePositiveInt('--seed', 2 ** 31)))
    .option('--no-chaos', 'no injected faults')
    .option('--json', 'print the report as JSON')
    .action(async (o: Omit<DemoOptions, 'json'> & { json?: boolean }) => {
      if (o.ttl < 400)
        throw new CliError('--ttl must be at least 400 ms (the demo uses a 100 ms node timeout, which must stay under ttl / 3)', 2);
      const report = await runDemo({ ...o, json: o.json === true });
      code = report.ok ? 0 : 1;
    });

  const nodes = program.command('nodes').description('local redis-server nodes for trying fencelock out');
  nodes
    .command('start')
    .description('start local nodes in the foreground; Ctrl-C stops them')
    .addOption(new Option('--count <n>', 'how many nodes').default(5).argParser(parsePositiveInt('--count', 32)))
    .option('--port <port>', 'first port (consecutive after it); default: free ports', parsePositiveInt('--port', 65_535))
    .action(async (o: { count: number; port?: number }) => nodesStart(o));

  program
    .command('inspect')
    .description('per node: holder, remaining lease, fence counter, or the node error')
    .argument('<resource>', 'the locked resource name')
    .requiredOption('--nodes <urls>', 'comma-separated redis:// URLs of the lock nodes', parseUrls('--nodes'))
    .option('--prefix <prefix>', 'key prefix the locks use (default fencelock:)')
    .option('--json', 'print JSON')
    .action(async (resource: string, o: { nodes: string[]; json?: boolean; prefix?: string }) => {
      code = await inspect(resource, { ...o, json: o.json === true });
    });

  program
    .command('release')
    .description('delete a lock on every node whoever holds it (admin)')
    .argument('<resource>', 'the locked resource name')
    .requiredOption('--nodes <urls>', 'comma-separated redis:// URLs of the lock nodes', parseUrls('--nodes'))
    .option('--force', 'required: confirms you mean to delete another owner’s lock')
    .option('--yes', 'do not ask for confirmation')
    .option('--prefix <prefix>', 'key prefix the locks use (default fencelock:)')
    .option('--json', 'print JSON')
    .action(async (resource: string, o: { nodes: string[]; force?: boolean; yes?: boolean; json?: boolean; prefix?: string }) => {
      code = await release(resource, { ...o, force: o.force === true, yes: o.yes === true, json: o.json === true });
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof CliError) {
      process.stderr.write(`fencelock: ${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof RedisServerNotFoundError) {
      process.stderr.write(`fencelock: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`fencelock: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

// commander's argument parsers throw CliError; commander wraps nothing, so they arrive here as is.
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`fencelock: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
