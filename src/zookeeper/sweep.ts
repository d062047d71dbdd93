// The sweep that keeps what fencelock leaves in ZooKeeper bounded. A queue's znode is made by the first acquire
// that finds it missing (in one transaction with that acquire's znode: recipe.ts, enqueue) and stays while the
// resource is in use; a release leaves it (deleting it would cost a write now and another at the next
// acquire), and so does a holder or waiter whose session ended (a crash, an expiry): the ensemble deletes its
// ephemeral znodes, not their queue. Every manager sweeps its root instead, deleting the queues it finds
// empty, and forgets them (known-queues.ts). Container znodes (ZooKeeper >= 3.5, what Curator makes) would
// have the ensemble delete them, but node-zookeeper-client 1.1 cannot make one: it has no createContainer
// request (opcode 19), the container mode (4) passed to its create makes a persistent znode, and it cannot
// read the answer to a container create (it drops the connection on an unknown reply type; a transaction's
// answer with one throws out of its socket handler).
//
// Safe against an acquire racing it: a queue deleted before an acquire's plain create makes that create fail
// with NO_NODE, and the acquire makes the queue with its znode in one transaction. A queue with a holder or a
// waiter is never deleted: ZooKeeper refuses to delete a znode that has children.
import type { KnownQueues } from './known-queues.js';
import type { ZooKeeperStore } from './store.js';

/** At most this many queues looked at per sweep (the next sweep goes on from there), this many at a time. */
export const SWEEP_LIMIT = 2_000;
const SWEEP_BATCH = 20;

/** How often a manager sweeps: every `ttl` (its session's timeout), between 1 s and 60 s. */
export const sweepPeriod = (ttl: number): number => Math.min(60_000, Math.max(1_000, ttl));

/**
 * Every `period` ms, while the manager has a session (a manager never used connects for no sweep), deletes
 * the empty queues under `root`. Failures are left to the next sweep. Returns a function that stops it.
 */
export function startSweeping(store: ZooKeeperStore, known: KnownQueues, root: string, period: number): () => void {
  let after = ''; // the last queue looked at: a root too large for one sweep is covered over several
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const next = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void sweep(store, known, root, after)
        .then((last) => (after = last))
        .catch(() => undefined) // the ensemble out of reach, the manager closing: the next sweep
        .finally(next);
    }, period);
    timer.unref(); // never keeps the process alive
  };
  next();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** One sweep, from the queue after `after` on (wrapping around); the last queue it looked at, '' when it saw them all. */
async function sweep(store: ZooKeeperStore, known: KnownQueues, root: string, after: string): Promise<string> {
  if (!(await store.hasSession())) return after;
  const names = ((await store.children(root)) ?? []).sort();
  const queue = [...names.filter((n) => n > after), ...names.filter((n) => n <= after)].slice(0, SWEEP_LIMIT);
  for (let i = 0; i < queue.length; i += SWEEP_BATCH)
    await Promise.all(
      // One delete per queue, no read first: ZooKeeper itself refuses to delete a queue someone is in.
      queue.slice(i, i + SWEEP_BATCH).map(async (name) => {
        // Deleted: this manager's next acquire of it makes it again, with its znode, in one transaction.
        if (await store.removeIfEmpty(`${root}/${name}`)) known.forget(`${root}/${name}`);
      }),
    );
  return queue.length < names.length ? (queue.at(-1) ?? '') : '';
}
