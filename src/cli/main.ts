#!/usr/bin/env node
// The fencelock command line: a thin layer over the public API and the test-support nodes.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { RedisServerNotFoundError } from '../testing/index.js';
import { InvalidArgumentError } from '../index.js';
import { inspect, nodesStart, release } from './commands.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import { run } from './run.js';
import { watch } from './watch.js';
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

/** --nodes, or else FENCELOCK_NODES; bad usage (exit 2) when neither is given. */
function lockNodes(o: { nodes?: string[] }): string[] {
  if (o.nodes) return o.nodes;
  const env = process.env.FENCELOCK_NODES;
  if (env) return parseUrls('FENCELOCK_NODES')(env);
  throw new CliError('--nodes is required (or set FENCELOCK_NODES): comma-separated redis:// URLs of the lock nodes', EXIT.USAGE);
}

/** Where the locks live: --nodes (or FENCELOCK_NODES) and --prefix (or FENCELOCK_PREFIX). */
function lockTarget(o: { nodes?: string[]; prefix?: string }): { nodes: string[]; prefix?: string } {
  const prefix = o.prefix ?? (process.env.FENCELOCK_PREFIX || undefined);
  return { nodes: lockNodes(o), ...(prefix ? { prefix } : {}) };
}

const NODES_HELP = 'comma-separated redis:// URLs of the lock nodes (default: $FENCELOCK_NODES)';
const PREFIX_HELP = 'key prefix the locks use (default: $FENCELOCK_PREFIX, else fencelock:)';

/** Exit codes: see exit-codes.ts (listed in --help). */
export async function main(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = new Command('fencelock')
    .description(
      'Distributed locks on Redis: run a command under a lock, inspect and watch locks, release them, run local nodes, the demo.',
    )
    .version(version)
    .exitOverride()
    .enablePositionalOptions()
    .configureOutput({ outputError: (text, write) => write(text) })
    .addHelpText('after', EXIT_CODES_HELP)
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
    .option('--json', 'print the nodes as JSON')
    .action(async (o: { count: number; port?: number; json?: boolean }) => nodesStart({ ...o, json: o.json === true }));

  program
    .command('run')
    .description('run a command while holding a lock (a distributed flock): auto-extended, released when it exits')
    .usage('[options] <resource> -- <command> [args...]')
    .argument('<resource>', 'the resource to lock')
    .argument('<command...>', 'the command to run, after --')
    .passThroughOptions()
    .option('--nodes <urls>', NODES_HELP, parseUrls('--nodes'))
    .option('--prefix <prefix>', PREFIX_HELP)
    .addOption(
      new Option('--ttl <ms>', 'lease in ms, extended every ttl/3 while the command runs')
        .default(30_000)
        .argParser(parsePositiveInt('--ttl', 2 ** 31 - 1)),
    )
    .addOption(
      new Option('--timeout <ms>', 'how long to wait for the lock').default(10_000).argParser(parsePositiveInt('--timeout', 2 ** 31 - 1)),
    )
    .option('--no-wait', 'one attempt: exit 75 at once if another owner holds the lock')
    .addOption(
      new Option('--grace <ms>', 'after a lost lock: ms between SIGTERM and SIGKILL')
        .default(10_000)
        .argParser(parsePositiveInt('--grace', 2 ** 31 - 1)),
    )
    .option('--json', 'status lines as JSON on stderr (acquired, not-acquired, exit)')
    .action(
      async (
        resource: string,
        command: string[],
        o: { nodes?: string[]; prefix?: string; ttl: number; timeout: number; wait: boolean; grace: number; json?: boolean },
      ) => {
        code = await run(resource, command, {
          ...lockTarget(o),
          ttl: o.ttl,
          timeout: o.wait ? o.timeout : 0,
          grace: o.grace,
          json: o.json === true,
        });
      },
    );

  program
    .command('watch')
    .description('a live view of locks: holder, remaining lease, fence, waiters and node states, refreshed in place')
    .argument('<resource...>', 'the resources to watch')
    .option('--nodes <urls>', NODES_HELP, parseUrls('--nodes'))
    .option('--prefix <prefix>', PREFIX_HELP)
    .addOption(new Option('--interval <ms>', 'ms between refreshes').default(1_000).argParser(parsePositiveInt('--interval', 3_600_000)))
    .addOption(
      new Option('--count <n>', 'stop after this many refreshes (default: until Ctrl-C)').argParser(
        parsePositiveInt('--count', 1_000_000_000),
      ),
    )
    .option('--json', 'one JSON line per refresh')
    .action(async (resources: string[], o: { nodes?: string[]; prefix?: string; interval: number; count?: number; json?: boolean }) => {
      code = await watch(resources, {
        ...lockTarget(o),
        interval: o.interval,
        ...(o.count !== undefined ? { count: o.count } : {}),
        json: o.json === true,
      });
    });

  program
    .command('inspect')
    .description('per node: holder, remaining lease, waiters, fence counter and data state, or the node error')
    .argument('<resource>', 'the locked resource name')
    .option('--nodes <urls>', NODES_HELP, parseUrls('--nodes'))
    .option('--prefix <prefix>', PREFIX_HELP)
    .option('--json', 'print JSON')
    .action(async (resource: string, o: { nodes?: string[]; json?: boolean; prefix?: string }) => {
      code = await inspect(resource, { ...lockTarget(o), json: o.json === true });
    });

  program
    .command('release')
    .description('delete a lock on every node whoever holds it (admin)')
    .argument('<resource>', 'the locked resource name')
    .option('--nodes <urls>', NODES_HELP, parseUrls('--nodes'))
    .option('--force', 'required: confirms you mean to delete another owner’s lock')
    .option('--yes', 'do not ask for confirmation')
    .option('--prefix <prefix>', PREFIX_HELP)
    .option('--json', 'print JSON')
    .action(async (resource: string, o: { nodes?: string[]; force?: boolean; yes?: boolean; json?: boolean; prefix?: string }) => {
      code = await release(resource, {
        ...lockTarget(o),
        force: o.force === true,
        yes: o.yes === true,
        json: o.json === true,
      });
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT.USAGE;
    if (error instanceof InvalidArgumentError) {
      process.stderr.write(`fencelock: ${error.message}\n`);
      return EXIT.USAGE;
    }
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
