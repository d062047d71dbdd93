// `fencelock watch <resource>…`: a live view of locks while an incident runs. Each refresh inspects every
// resource (read-only) and shows the holder a quorum agrees on, its remaining lease, the fence, the
// waiters and how the nodes are doing; in place on a terminal, as lines (or JSON lines) otherwise.
import type { LockInfo } from '../index.js';
import { manager, nodeState, remaining } from './commands.js';
import { EXIT } from './exit-codes.js';
import { colours, table, toJsonLine } from './output.js';

export interface WatchOptions {
  readonly nodes: readonly string[];
  readonly prefix?: string;
  /** ms between refreshes */
  readonly interval: number;
  /** refreshes before exiting; undefined: until SIGINT/SIGTERM */
  readonly count?: number;
  readonly json: boolean;
}

export async function watch(resources: readonly string[], o: WatchOptions): Promise<number> {
  const locks = manager(o.nodes, o.prefix);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const live = process.stdout.isTTY === true && !o.json;
  try {
    // Bounded by --count, or by the signal that ends an interactive session.
    for (let refresh = 1; !stop.signal.aborted; refresh++) {
      const infos = await Promise.all(resources.map((r) => locks.inspect(r)));
      const at = new Date().toISOString();
      if (o.json) process.stdout.write(toJsonLine({ at, resources: infos }) + '\n');
      else process.stdout.write((live ? '\x1b[H\x1b[2J' : '') + render(infos, at, o) + '\n');
      if (o.count !== undefined && refresh >= o.count) break;
      await sleep(o.interval, stop.signal);
    }
    return EXIT.OK;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await locks.close();
  }
}

function render(infos: readonly LockInfo[], at: string, o: WatchOptions): string {
  const c = colours(process.stdout);
  const rows = [['resource', 'holder', 'remaining', 'fence', 'waiters', 'nodes'].map((h) => c('bold', h))];
  for (const info of infos) {
    const holding = info.nodes.filter((n) => info.holder !== null && n.owner === info.holder);
    const left = holding.length > 0 ? remaining(Math.min(...holding.map((n) => n.remaining))) : '';
    const waiters = Math.max(0, ...info.nodes.map((n) => n.waiters));
    const up = info.nodes.filter((n) => !n.error).length;
    const odd = info.nodes
      .filter((n) => n.error || (n.state !== 'trusted' && n.state !== 'new'))
      .map((n) => `${n.node} ${n.error ? c('red', 'down') : nodeState(n, c)}`);
    const health = `${up}/${info.nodes.length} up (quorum ${info.quorum})${odd.length > 0 ? `; ${odd.join('; ')}` : ''}`;
    rows.push([
      info.resource,
      info.holder ?? c('dim', '(free)'),
      left,
      String(info.fence),
      String(waiters),
      up < info.quorum ? c('red', health) : health,
    ]);
  }
  return `${c('bold', 'fencelock watch')}  ${at}  every ${o.interval} ms (Ctrl-C to stop)\n${table(rows)}`;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
