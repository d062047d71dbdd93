// What one hand-over costs, against a bare round trip, on local nodes (docs/benchmarks.md, "The scripts' common
// paths": why W3 and W4 stay near the floor). One holder and one waiter on a key, the waiter queued 3 ms before
// the release (the node and both sides idle meanwhile, as between W3's and W4's 1 ms holds); times from the
// moment release() is called:
//   same manager    the release grants this process's next caller (release.lua with a successor)
//   other manager   the release grants another manager's queued waiter and publishes the grant; a plain subscriber
//                   in the same process marks when the message arrives, and the waiting manager's events when
//                   its waiter woke ('retry') and when it holds the lock ('acquired'): the rest is its own work
//   bare round trip a GET on every node after the same 3 ms idle: what any hand-over costs at least
//
//   npm run build
//   node --import tsx bench/handover-gap.ts [--nodes 5]      (ITER=N hand-overs per kind, default 400)
import { Redis } from 'ioredis';
import type { LockManager as Manager } from '../src/index.js';
import { startRedisNode } from '../src/testing/index.js';
import { numberOption } from './diagnostic-args.js';
import { percentile } from './stats.js';

const { LockManager } = (await import('../dist/esm/index.js' as string)) as typeof import('../src/index.js');
const argv = process.argv.slice(2);
const NODES = numberOption(argv, '--nodes', 1);
const ITER = Number(process.env.ITER ?? 400);
const IDLE_MS = 3;

const nodes = await Promise.all(Array.from({ length: NODES }, () => startRedisNode()));
const connections: Redis[] = [];
/** One new connection per node, closed at the end. */
const connect = (): Redis[] => {
  const made = nodes.map((n) => new Redis(n.url));
  connections.push(...made);
  return made;
};
const holderClients = connect();
const holder = new LockManager(holderClients, { ttl: 10_000 });
const other = new LockManager(connect(), { ttl: 10_000 });
const spy = connect()[0] as Redis;
let heardAt = 0;
let wokenAt = 0;
let acquiredAt = 0;
spy.on('pmessage', () => (heardAt ||= performance.now()));
other.on('retry', () => (wokenAt ||= performance.now()));
other.on('acquired', () => (acquiredAt ||= performance.now()));
await spy.psubscribe('fencelock:*');
const idle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, IDLE_MS));
const p50 = (xs: readonly number[]): string => (percentile(xs, 50) ?? NaN).toFixed(3);

interface Handovers {
  /** release() called → the waiter's acquire resolved */
  granted: number[];
  /** → the grant's message arrived in the waiter's process (its first node's) */
  heard: number[];
  /** message → the waiter woke ('retry') → it held the lock ('acquired'): another manager's waiter only */
  woken: number[];
  held: number[];
}

async function handovers(waiter: Manager, key: string): Promise<Handovers> {
  const granted: number[] = [];
  const heard: number[] = [];
  const woken: number[] = [];
  const held: number[] = [];
  for (let i = 0; i < ITER; i++) {
    const lock = await holder.acquire(key);
    const waiting = waiter.acquire(key, { timeout: 5_000 });
    await idle();
    heardAt = wokenAt = acquiredAt = 0;
    const start = performance.now();
    const released = lock.release();
    const next = await waiting;
    granted.push(performance.now() - start);
    if (heardAt > 0) heard.push(heardAt - start);
    if (heardAt > 0 && wokenAt > heardAt && acquiredAt > wokenAt) {
      woken.push(wokenAt - heardAt);
      held.push(acquiredAt - wokenAt);
    }
    await released;
    await next.release();
  }
  return { granted, heard, woken, held };
}

try {
  const bare: number[] = [];
  for (let i = 0; i < ITER; i++) {
    await idle();
    const start = performance.now();
    await Promise.all(holderClients.map((c) => c.get('handover-gap:bare')));
    bare.push(performance.now() - start);
  }
  const same = await handovers(holder, 'handover-gap:same');
  const across = await handovers(other, 'handover-gap:other');
  console.log(
    `${NODES} node(s), ${ITER} each, p50 ms after ${IDLE_MS} ms idle: bare round trip ${p50(bare)}; ` +
      `hand-over to the same manager ${p50(same.granted)}; to another manager ${p50(across.granted)} ` +
      `(its grant heard at ${p50(across.heard)}; then the waiter woke in ${p50(across.woken)} and held the lock ` +
      `${p50(across.held)} later)`,
  );
} finally {
  await holder.close();
  await other.close();
  for (const c of connections) c.disconnect();
  await Promise.all(nodes.map((n) => n.stop()));
}
