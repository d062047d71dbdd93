#!/usr/bin/env node
// The fencelock command line: a thin layer over the public API and the test-support nodes.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { RedisServerNotFoundError } from '../testing/index.js';
import { InvalidArgumentError } from '../index.js';
import { parseEtcdUrl } from '../etcd/index.js';
import { parseZooKeeperUrl } from '../zookeeper/index.js';
import { inspect, nodesStart, release } from './commands.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import { run } from './run.js';
import { watch } from './watch.js';
import { DEMO_BACKENDS } from './demo/clusters.js';
import type { DemoOptions } from './demo/run-demo.js';
import { BREAKABLE, FAULTS, LAYERS, parseNames, type Breakable, type Fault, type Layer } from './demo/orders/plan.js';
import { CliError, parsePositiveInt, parseUrls } from './output.js';
import { demoPackages, requirePackages } from './packages.js';

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

/** A parser for one URL naming a cluster's members (`--etcd`, `--zk`), checked as the library checks it; bad: usage (exit 2). */
function clusterUrl(name: string, parse: (url: string) => unknown): (value: string) => string {
  return (value) => {
    try {
      parse(value.trim());
    } catch (error) {
      throw new CliError(`${name}: ${(error as Error).message}`, EXIT.USAGE);
    }
    return value.trim();
  };
}

/** `--etcd etcd://host:port,host:port`: an etcd cluster's members. */
const etcdUrl = (name: string): ((value: string) => string) => clusterUrl(name, parseEtcdUrl);
/** `--zk zk://host:port,host:port`: a ZooKeeper ensemble's servers. */
const zkUrl = (name: string): ((value: string) => string) => clusterUrl(name, parseZooKeeperUrl);

/** Where the locks live, as the flags or their environment variables say: one of the three, never two. */
interface StoreFlags {
  nodes?: string[];
  etcd?: string;
  zk?: string;
}

/**
 * --nodes (or FENCELOCK_NODES): Redis nodes; --etcd (or FENCELOCK_ETCD): an etcd cluster; --zk (or
 * FENCELOCK_ZK): a ZooKeeper ensemble; the last two as a one-entry list the manager helper recognises.
 * Bad usage (exit 2) when none, or more than one, is given (flags first; the environment only without any).
 */
function lockNodes(o: StoreFlags): string[] {
  const stores = [
    { flag: '--nodes', env: 'FENCELOCK_NODES', given: o.nodes, parse: (v: string) => parseUrls('FENCELOCK_NODES')(v) },
    { flag: '--etcd', env: 'FENCELOCK_ETCD', given: o.etcd && [o.etcd], parse: (v: string) => [etcdUrl('FENCELOCK_ETCD')(v)] },
    { flag: '--zk', env: 'FENCELOCK_ZK', given: o.zk && [o.zk], parse: (v: string) => [zkUrl('FENCELOCK_ZK')(v)] },
  ];
  const one = (names: string[]): string =>
    `${names.slice(0, -1).join(', ')} and ${names.at(-1)}: give one of --nodes (Redis), --etcd (etcd) or --zk (ZooKeeper), not ${names.length === 2 ? 'both' : 'all three'}`;
  const flags = stores.filter((s) => s.given);
  if (flags.length > 1) throw new CliError(one(flags.map((s) => s.flag)), EXIT.USAGE);
  if (flags[0]?.given) return flags[0].given;
  const envs = stores.filter((s) => process.env[s.env]);
  if (envs.length > 1) throw new CliError(one(envs.map((s) => s.env)), EXIT.USAGE);
  const env = envs[0];
  if (env) return env.parse(process.env[env.env] as string);
  throw new CliError(
    '--nodes is required (or set FENCELOCK_NODES): comma-separated redis:// URLs of the lock nodes; or --etcd etcd://host:port,… (FENCELOCK_ETCD), or --zk zk://host:port,… (FENCELOCK_ZK)',
    EXIT.USAGE,
  );
}

/** Where the locks live: --nodes / --etcd / --zk (or their FENCELOCK_ variables) and --prefix (or FENCELOCK_PREFIX). */
function lockTarget(o: StoreFlags & { prefix?: string }): { nodes: string[]; prefix?: string } {
  const prefix = o.prefix ?? (process.env.FENCELOCK_PREFIX || undefined);
  return { nodes: lockNodes(o), ...(prefix ? { prefix } : {}) };
}

const NODES_HELP = 'comma-separated redis:// URLs of the lock nodes (default: $FENCELOCK_NODES)';
const ETCD_HELP = 'etcd://host:port[,host:port…] of an etcd cluster, instead of --nodes (default: $FENCELOCK_ETCD)';
const ZK_HELP = 'zk://host:port[,host:port…] of a ZooKeeper ensemble, instead of --nodes (default: $FENCELOCK_ZK)';
const PREFIX_HELP = 'key prefix the locks use (default: $FENCELOCK_PREFIX, else fencelock:)';

/** The demo's options as commander parses them: both scenarios' (each checked against the other's). */
type DemoCliOptions = Omit<DemoOptions, 'json'> & {
  json?: boolean;
  scenario: 'stock' | 'orders';
  orders: number;
  layers?: Layer[];
  faults?: Fault[];
  break?: Breakable[];
  databaseUrl?: string;
};

/** Exit codes: see exit-codes.ts (listed in --help). */
export async function main(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = new Command('fencelock')
    .description(
      'Distributed locks on Redis, etcd or ZooKeeper: run a command under a lock, inspect and watch locks, release them, run local nodes, the demo.',
    )
    .version(version)
    .exitOverride()
    .enablePositionalOptions()
    .configureOutput({ outputError: (text, write) => write(text) })
    .addHelpText('after', EXIT_CODES_HELP)
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('demo')
    .description(
      'worker processes under fencelock, with injected faults and a verdict: stock deduction (default), or orders with duplicate deliveries and four layers of protection (--scenario orders)',
    )
    .addOption(
      new Option(
        '--scenario <name>',
        'stock: one SKU sold under a fenced lock; orders: idempotency keys, a unique key, reconciliation (docs/layers.md)',
      )
        .choices(['stock', 'orders'])
        .default('stock'),
    )
    .option('--nodes <urls>', 'comma-separated redis:// URLs of lock nodes (default: start 5 local nodes)', parseUrls('--nodes'))
    .option('--storage <url>', 'stock: redis:// URL of the storage node (default: start a local one)', (v) => parseUrls('--storage')(v)[0])
    .addOption(new Option('--workers <n>', 'worker processes').default(8).argParser(parsePositiveInt('--workers', 64)))
    .addOption(new Option('--stock <n>', 'stock: units to sell').default(500).argParser(parsePositiveInt('--stock', 1_000_000)))
    .addOption(new Option('--orders <n>', 'orders: distinct order requests').default(150).argParser(parsePositiveInt('--orders', 100_000)))
    .option(
      '--layers <names>',
      `orders: the layers that are on (default: all: ${LAYERS.join(',')}; "" for none)`,
      parseNames('--layers', LAYERS),
    )
    .option('--faults <names>', `orders: the faults injected (default: all: ${FAULTS.join(',')})`, parseNames('--faults', FAULTS))
    .option(
      '--break <names>',
      `orders: break a layer on purpose (${BREAKABLE.join(',')}: its lease ends long before the work)`,
      parseNames('--break', BREAKABLE),
    )
    .option(
      '--database-url <url>',
      'orders: a PostgreSQL server (default: an embedded one, PGlite); the run uses a schema of its own and drops it',
    )
    .addOption(new Option('--ttl <ms>', 'lock lease in ms').default(1_000).argParser(parsePositiveInt('--ttl', 600_000)))
    .addOption(new Option('--seed <n>', 'seed for the chaos choices').default(1).argParser(parsePositiveInt('--seed', 2 ** 31)))
    .addOption(
      new Option(
        '--backend <store>',
        'where the locks live: 5 local Redis nodes (Redlock), a local 3-member etcd cluster or a local 3-server ZooKeeper ensemble',
      )
        .choices(DEMO_BACKENDS)
        .default('redis'),
    )
    .option('--no-chaos', 'no injected faults')
    .option('--json', 'print the report as JSON')
    .action(async (o: DemoCliOptions, command: Command) => {
      if (o.backend !== 'redis' && o.nodes) throw new CliError(`--nodes names Redis lock nodes: not with --backend ${o.backend}`, 2);
      if (o.ttl < 400)
        throw new CliError(
          `--ttl must be at least 400 ms (${o.backend === 'zookeeper' ? 'the shortest session the ensemble grants: 2 ticks of 200 ms' : 'the demo uses a 100 ms node timeout, which must stay under ttl / 3'})`,
          2,
        );
      const given = (name: string): boolean => command.getOptionValueSource(name) === 'cli';
      const json = o.json === true;
      await requirePackages(demoPackages(o.scenario, o.backend ?? 'redis'), `the demo (--backend ${o.backend ?? 'redis'})`);
      // Loaded here, not at the top: they import ioredis, which `fencelock --help` and the other commands must not need.
      if (o.scenario === 'orders') {
        const misplaced = ['storage', 'stock'].filter(given);
        if (misplaced.length > 0) throw new CliError(`--${misplaced.join(', --')}: for the stock scenario, not with --scenario orders`, 2);
        if (given('faults') && !o.chaos) throw new CliError('--faults and --no-chaos contradict each other', 2);
        const breaks = o.break ?? [];
        if (o.backend === 'etcd' && breaks.includes('lock')) {
          throw new CliError('--break lock needs Redis: etcd grants no lease shorter than 2 s', 2);
        }
        if (o.backend === 'zookeeper' && breaks.includes('lock')) {
          throw new CliError(
            '--break lock needs Redis: on ZooKeeper the lease is the session, so a lock outlives its ttl until it is released or its session ends (the next holder never gets in early)',
            2,
          );
        }
        const { runOrders } = await import('./demo/orders/run-orders.js');
        const report = await runOrders({
          ...(o.nodes ? { nodes: o.nodes } : {}),
          backend: o.backend,
          ...(o.databaseUrl ? { databaseUrl: o.databaseUrl } : {}),
          workers: o.workers,
          orders: o.orders,
          ttl: o.ttl,
          seed: o.seed,
          layers: o.layers ?? [...LAYERS],
          faults: o.chaos ? (o.faults ?? [...FAULTS]) : [],
          breaks,
          json,
        });
        code = report.ok ? 0 : 1;
        return;
      }
      const misplaced = ['orders', 'layers', 'faults', 'break', 'databaseUrl'].filter(given);
      if (misplaced.length > 0) {
        throw new CliError(
          `${misplaced.map((m) => `--${m.replace(/[A-Z]/g, (x) => `-${x.toLowerCase()}`)}`).join(', ')}: for --scenario orders`,
          2,
        );
      }
      const { runDemo } = await import('./demo/run-demo.js');
      const report = await runDemo({ ...o, json });
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
    .option('--etcd <url>', ETCD_HELP, etcdUrl('--etcd'))
    .option('--zk <url>', ZK_HELP, zkUrl('--zk'))
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
        o: StoreFlags & { prefix?: string; ttl: number; timeout: number; wait: boolean; grace: number; json?: boolean },
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
    .option('--etcd <url>', ETCD_HELP, etcdUrl('--etcd'))
    .option('--zk <url>', ZK_HELP, zkUrl('--zk'))
    .option('--prefix <prefix>', PREFIX_HELP)
    .addOption(new Option('--interval <ms>', 'ms between refreshes').default(1_000).argParser(parsePositiveInt('--interval', 3_600_000)))
    .addOption(
      new Option('--count <n>', 'stop after this many refreshes (default: until Ctrl-C)').argParser(
        parsePositiveInt('--count', 1_000_000_000),
      ),
    )
    .option('--json', 'one JSON line per refresh')
    .action(async (resources: string[], o: StoreFlags & { prefix?: string; interval: number; count?: number; json?: boolean }) => {
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
    .option('--etcd <url>', ETCD_HELP, etcdUrl('--etcd'))
    .option('--zk <url>', ZK_HELP, zkUrl('--zk'))
    .option('--prefix <prefix>', PREFIX_HELP)
    .option('--json', 'print JSON')
    .action(async (resource: string, o: StoreFlags & { json?: boolean; prefix?: string }) => {
      code = await inspect(resource, { ...lockTarget(o), json: o.json === true });
    });

  program
    .command('release')
    .description('delete a lock on every node whoever holds it (admin)')
    .argument('<resource>', 'the locked resource name')
    .option('--nodes <urls>', NODES_HELP, parseUrls('--nodes'))
    .option('--etcd <url>', ETCD_HELP, etcdUrl('--etcd'))
    .option('--zk <url>', ZK_HELP, zkUrl('--zk'))
    .option('--force', 'required: confirms you mean to delete another owner’s lock')
    .option('--yes', 'do not ask for confirmation')
    .option('--prefix <prefix>', PREFIX_HELP)
    .option('--json', 'print JSON')
    .action(async (resource: string, o: StoreFlags & { force?: boolean; yes?: boolean; json?: boolean; prefix?: string }) => {
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
