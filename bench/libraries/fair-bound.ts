// The fair bound: not a lock, a reference for W4. The least a lock that is fair across processes can do per
// hand-over when the next caller in line is in another process: one message through Redis from the releasing
// process to the next one, and nothing else. No script, no key, no fence, no lease, no queue: the W4 worker
// processes pass a token round a ring (process 0, 1, ..., P-1, 0, ...), each PUBLISHing "turn next" on every
// node it uses, and the next process takes the turn once a quorum of those messages arrived (all of them on one
// node, 3 of 5 on five). Each turn goes to the oldest waiting caller of that process, so every caller waits its
// turn as in a FIFO queue.
//
// What it shows: W4's floor barges (the releasing caller, its process awake, takes the key again one round trip
// after its release; its max/min per caller is about 3), and no fair hand-over can be cheaper than this one, which
// must wake another process. docs/benchmarks.md "What bounds W4".
import type { Redis } from 'ioredis';
import type { LibraryContext, LockLibrary, Mode } from '../types.js';
import { closeIoredis, connectIoredis } from './clients.js';

export const settings = {
  client: 'ioredis',
  handOver: 'PUBLISH "turn next" on every node; the next process goes on a quorum of messages (1 of 1, 3 of 5)',
  order: 'strict round robin over the W4 worker processes; in a process, its callers in arrival order',
  lock: 'none: no key, no fence, no lease (a reference, not a lock)',
};

/** The W4 contention key (w4-worker.ts); any other key (the warm-up's) is granted at once. */
const CONTENDED = 'w4:resource';
const CHANNEL = 'fair-bound:turn';

export function create(ctx: LibraryContext): LockLibrary<string> {
  const ring = ctx.w4;
  let clients: Redis[] = [];
  let subscribers: Redis[] = [];
  let quorum = 1;
  /** the turn this process holds or waits for, and how many nodes have announced it */
  let turn = 0;
  let heard = new Map<number, number>();
  let haveToken = false;
  let held = false;
  const waiting: Array<() => void> = [];

  const grantNext = (): void => {
    if (!haveToken || held) return;
    const next = waiting.shift();
    if (!next) return;
    held = true;
    next();
  };

  const onMessage = (_channel: string, message: string): void => {
    if (!ring) return;
    const [t, to] = message.split(' ').map(Number) as [number, number];
    if (to !== ring.index || t <= turn) return;
    const count = (heard.get(t) ?? 0) + 1;
    heard.set(t, count);
    if (count < quorum) return;
    heard = new Map([...heard].filter(([k]) => k > t));
    turn = t;
    haveToken = true;
    grantNext();
  };

  return {
    name: 'fair-bound',
    async setup(urls: readonly string[], mode: Mode): Promise<void> {
      const used = mode === 'single' ? urls.slice(0, 1) : urls;
      clients = await connectIoredis(used);
      subscribers = await connectIoredis(used);
      quorum = Math.floor(used.length / 2) + 1;
      for (const s of subscribers) s.on('message', onMessage);
      await Promise.all(subscribers.map((s) => s.subscribe(CHANNEL)));
      haveToken = ring?.index === 0;
    },
    acquire(key: string): Promise<string> {
      if (key !== CONTENDED || !ring) return Promise.resolve(key);
      return new Promise((resolve) => {
        waiting.push(() => resolve(key));
        grantNext();
      });
    },
    async release(key: string): Promise<void> {
      if (key !== CONTENDED || !ring) return;
      held = false;
      haveToken = false;
      turn += 1;
      const message = `${turn} ${(ring.index + 1) % ring.processes}`;
      // The next process counts turns from its own: every process sees every turn, so `turn` stays in step.
      await Promise.all(clients.map((c) => c.publish(CHANNEL, message)));
    },
    async close(): Promise<void> {
      await closeIoredis([...clients, ...subscribers]);
    },
  };
}
