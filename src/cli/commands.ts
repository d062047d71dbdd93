import { createInterface } from 'node:readline/promises';
import type { LockManager, NodeView } from '../index.js';
import { startRedisNodes } from '../testing/index.js';
import { lockManager } from './lock-store.js';
import { CliError, colours, table, toJson } from './output.js';

/** `fencelock nodes start`: local nodes in the foreground until Ctrl-C. */
export async function nodesStart(o: { count: number; port?: number; json: boolean }): Promise<void> {
  const nodes = await startRedisNodes(o.count, o.port === undefined ? {} : { port: o.port });
  const c = colours(process.stdout);
  if (o.json) {
    process.stdout.write(
      JSON.stringify({ nodes: nodes.nodes.map((n) => ({ url: n.url, pid: n.pid })), env: `FENCELOCK_NODES=${nodes.urls.join(',')}` }) +
        '\n',
    );
  } else {
    process.stdout.write(`${c('bold', `${o.count} redis-server node(s) running`)} (no persistence; stopped on Ctrl-C):\n`);
    for (const n of nodes.nodes) process.stdout.write(`  ${n.url}  pid ${n.pid}\n`);
    process.stdout.write(`\n--nodes ${nodes.urls.join(',')}\nexport FENCELOCK_NODES=${nodes.urls.join(',')}\n`);
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  process.stdout.write('\nstopping nodes...\n');
  await nodes.stop();
}

/** A node's data state for people: trusted, quarantined until when, being repaired (see NodeDataState). */
export function nodeState(n: NodeView, c: ReturnType<typeof colours>): string {
  if (n.state === 'quarantined')
    return c('yellow', `quarantined until ${new Date(Date.now() + n.quarantinedFor).toISOString()} (lost its data)`);
  if (n.state === 'repairing') return c('yellow', 'being repaired');
  if (n.state === 'untrusted') return c('red', 'untrusted (lost its data, not repaired)');
  return n.state ?? '';
}

/** A holder's remaining lease for people: -1 is a lease with no expiry of its own (ZooKeeper: the holder's session). */
export const remaining = (ms: number): string => (ms < 0 ? 'until released' : `${ms} ms`);

/** `fencelock inspect <resource>`: per node holder, remaining ms, waiters, fence counter and node state, or error. */
export async function inspect(resource: string, o: { nodes: string[]; json: boolean; prefix?: string }): Promise<number> {
  const locks = manager(o.nodes, o.prefix);
  try {
    const info = await locks.inspect(resource);
    const answered = info.nodes.filter((n) => !n.error).length;
    if (o.json) {
      process.stdout.write(toJson(info) + '\n');
    } else {
      const c = colours(process.stdout);
      const rows = [['node', 'holder', 'remaining', 'waiters', 'fence', 'node state'].map((h) => c('bold', h))];
      for (const n of info.nodes) {
        if (n.error) rows.push([n.node, c('red', `error: ${n.error.message.replace(`${n.node}: `, '')}`), '', '', '', '']);
        else
          rows.push([
            n.node,
            n.owner ?? c('dim', '(free)'),
            n.owner ? remaining(n.remaining) : '',
            String(n.waiters),
            String(n.fence),
            nodeState(n, c),
          ]);
      }
      process.stdout.write(
        `${c('bold', resource)}: ${info.holder ? `held by ${info.holder}` : 'not held by a quorum'} (quorum ${info.quorum} of ${info.nodes.length}, fence ${info.fence})\n`,
      );
      process.stdout.write(table(rows) + '\n');
    }
    if (answered < info.quorum) {
      const down = info.nodes.filter((n) => n.error).map((n) => n.node);
      throw new CliError(`only ${answered} of ${info.nodes.length} nodes answered (quorum ${info.quorum}); failed: ${down.join(', ')}`, 1);
    }
    return 0;
  } finally {
    await locks.close();
  }
}

/** `fencelock release <resource> --force`: forceRelease, confirmed on a terminal unless --yes. */
export async function release(
  resource: string,
  o: { nodes: string[]; force: boolean; yes: boolean; json: boolean; prefix?: string },
): Promise<number> {
  if (!o.force) throw new CliError('release deletes a lock whoever holds it: add --force to confirm you mean that', 2);
  if (!o.yes) {
    if (!process.stdin.isTTY) throw new CliError('not a terminal: add --yes to release without a confirmation prompt', 2);
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    const answer = await rl.question(`Delete the lock on "${resource}" on ${o.nodes.length} node(s), whoever holds it? [y/N] `);
    rl.close();
    if (!/^y(es)?$/i.test(answer.trim())) {
      process.stdout.write('cancelled\n');
      return 1;
    }
  }
  const locks = manager(o.nodes, o.prefix);
  try {
    const had = await locks.forceRelease(resource);
    if (o.json) process.stdout.write(toJson({ resource, released: had, nodes: o.nodes.length }) + '\n');
    else process.stdout.write(`released "${resource}": ${had} of ${o.nodes.length} node(s) had it\n`);
    return 0;
  } catch (error) {
    throw new CliError((error as Error).message, 1);
  } finally {
    await locks.close();
  }
}

/**
 * A manager on the command's target: Redis nodes, or one `etcd://` (--etcd) or `zk://` (--zk) URL. Bad input
 * is usage (exit 2). The default suits read-only commands (a patient nodeTimeout, for Redis nodes); `run`
 * passes its own ttl and keeps the default.
 */
export function manager(
  nodes: readonly string[],
  prefix?: string,
  options: { ttl: number; nodeTimeout?: number } = { ttl: 30_000, nodeTimeout: 1_000 },
): LockManager {
  const keyPrefix = prefix === undefined ? {} : { keyPrefix: prefix };
  const { nodeTimeout, ...common } = options;
  try {
    return lockManager(nodes, { ...common, ...keyPrefix }, nodeTimeout === undefined ? {} : { nodeTimeout });
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
}
