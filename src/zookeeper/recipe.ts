// Curator's lock recipe (InterProcessMutex), for one or several queues at once:
//
//   1. enqueue        one write creates an ephemeral sequential znode in every queue, owned by our
//                     session, holding our owner token, named as Curator names its own (queue.ts); a queue
//                     not known to exist (known-queues.ts) is made in the same transaction, so a fresh
//                     resource costs no write more than a busy one. The first look at a queue that was
//                     there is sent with the create: one round trip for both; a queue we made needs none
//   2. wait (turn)    per queue, watch the znode in our way until none is (FIFO: one release wakes one
//                     waiter); the session keeps our place meanwhile
//   3. fence          the zxid of the queue's last change as seen by the look that let us through (for a
//                     queue we made, the zxid of the write that made it): from the ensemble's log,
//                     strictly increasing per resource, no write of its own (takeTurn)
//
// The lease is the session: our znodes live as long as it does. A lock is valid from the last round trip
// that found its znodes, for the session's timeout (the ensemble cannot end the session sooner after hearing
// from us), less a drift allowance. Release deletes our znodes; the queue's znode, once empty, is left to the
// sweep (sweep.ts), so the next acquire of a busy resource finds it there.
import type { Grant, RetryInfo, WaitResult } from '../backend.js';
import { randomUUID } from 'node:crypto';
import { monotonicNow } from '../clock.js';
import { callClock, pauseAfterFailure, TOO_SLOW, untilGranted, type CallClock, type ConsensusHold } from '../consensus-call.js';
import { LockTimeoutError, NodeError, type NodeFailure, type QuorumError } from '../errors.js';
import { driftOf, type ResolvedAcquire } from '../options.js';
import { randomHex } from '../random.js';
import { blocker, isOurs, nodePrefix, ordered, type Child, type Queue } from './queue.js';
import type { KnownQueues } from './known-queues.js';
import type { Session, ZooKeeperStore } from './store.js';

/** What a lease loses to the servers' clocks running fast: the Redis default's allowance (not an option here). */
const DRIFT_FACTOR = 0.01;
const drift = (ttl: number): number => driftOf(ttl, DRIFT_FACTOR);

/** A ZooKeeper grant: its znodes, and the session that owns them. */
export interface ZooKeeperGrant extends Grant {
  readonly paths: readonly string[];
  readonly sessionId: string;
  /** the session's timeout as the ensemble granted it, ms: a lock's validity never exceeds it */
  readonly sessionTimeout: number;
}

/** What one acquire call asks: its queues (one per resource), and what names it in messages. */
export type Hold = ConsensusHold<Queue>;

/** One acquire call: what each of its steps needs. */
interface Call extends CallClock {
  readonly store: ZooKeeperStore;
  /** the queues the manager knows to exist: which create to send */
  readonly known: KnownQueues;
  readonly hold: Hold;
  readonly onRetry: (info: RetryInfo) => void;
  /** this call's owner token: the data of its znodes */
  readonly token: string;
  /** this call's protection id (a random UUID, as Curator's): in its znodes' names, to find them after a lost answer */
  readonly protectedId: string;
}

/** The QuorumError for a failed step; the manager hears of the failure too (its nodeError event). */
const quorumError = (resources: readonly string[], operation: string, store: ZooKeeperStore, error: unknown): QuorumError =>
  store.failures.quorumError(resources, operation, error);

/** The validity a round trip sent at `sentAt` gives a lock of `ttl` on a session of `sessionTimeout`. */
const validFrom = (sentAt: number, ttl: number, sessionTimeout: number): number => {
  const lease = Math.min(ttl, sessionTimeout);
  return sentAt + lease - drift(lease);
};

/**
 * Waits until this call is at the front of every queue, or its timeout passes (LockTimeoutError), or the
 * signal aborts. Whatever it put in ZooKeeper is deleted on failure.
 */
export function acquire(
  store: ZooKeeperStore,
  known: KnownQueues,
  hold: Hold,
  o: ResolvedAcquire,
  signal: AbortSignal,
  onRetry: (info: RetryInfo) => void,
): Promise<WaitResult> {
  const call: Call = { ...callClock(o, signal), store, known, hold, onRetry, token: randomHex(18), protectedId: randomUUID() };
  return untilGranted({ ...call, resources: hold.resources }, () => attempt(call));
}

/** One pass: our znodes, our turn, our fence. Why not, when it ended without a grant to keep (start over). */
async function attempt(call: Call): Promise<ZooKeeperGrant | string> {
  const { store, hold, o } = call;
  let session: Session;
  try {
    session = await store.session();
  } catch (error) {
    throw quorumError(hold.resources, 'acquire', store, error);
  }
  // Nobody waits behind a caller that gave up; a znode whose create answer was lost is found by its name.
  const cleanUp = (): Promise<number> =>
    removeForSure(store, session.id, () => removeOurs(store, hold.queues, call.protectedId), 'dequeue', hold.resources);
  try {
    const sentAt = monotonicNow();
    const { paths, madeAt, firstLook } = await enqueue(call);
    const turn = await takeTurn(call, session, paths, madeAt, { sentAt, look: firstLook });
    if (turn === 'expired') {
      await cleanUp();
      return 'its session expired while it waited';
    }
    const grant: ZooKeeperGrant = {
      resources: hold.resources,
      token: call.token,
      fence: turn.fence,
      ttl: Math.min(o.ttl, session.timeout),
      validUntil: validFrom(turn.sentAt, o.ttl, session.timeout),
      paths,
      sessionId: session.id,
      sessionTimeout: session.timeout,
      ops: hold.ops,
    };
    if (grant.validUntil > monotonicNow()) return grant;
    // The pass outlasted the session's timeout (a frozen server, an election): given back, and tried again while the call has time.
    await cleanUp();
    return TOO_SLOW;
  } catch (error) {
    await cleanUp();
    throw error instanceof NodeError ? quorumError(hold.resources, 'acquire', store, error) : error;
  }
}

/** A look at a queue: its children, and the zxid of its last change (`pzxid`). */
type Look = { names: string[]; pzxid: bigint } | null;

/**
 * Step 1: our znode in every queue, in one write, and the first queue's children with it: both sent at once,
 * one round trip (ZooKeeper answers a session's requests in order, so the list already holds our znode).
 * A queue the manager knows to exist (known-queues.ts) takes our znode in a plain create; one it does not is
 * made in the same transaction as our znode: either way one write when the guess is right. A queue made so
 * needs no look: our znode is its first child, nobody can be ahead of it (takeTurn). A wrong guess
 * fails the write (a queue missing: never made, or a sweep deleted it; or a queue made with it that exists)
 * and corrects the guess for the next try: one failed write more, as often as there are queues, and a sweep
 * racing the acquire may cost a few more, so a bounded number of tries.
 */
async function enqueue(call: Call): Promise<{ paths: string[]; madeAt: Array<bigint | undefined>; firstLook: Look | undefined }> {
  const { store, known, hold } = call;
  const tries = MAX_WRONG_GUESSES + 2 * hold.queues.length;
  for (let tried = 1; ; tried++) {
    const places = hold.queues.map((q) => ({ queue: q.path, node: nodePrefix(q, call.protectedId), withQueue: !known.has(q.path) }));
    const [enqueued, firstLook] = await Promise.all([
      store.enqueue(places, Buffer.from(call.token)),
      places[0]?.withQueue ? undefined : store.list((hold.queues[0] as Queue).path),
    ]);
    if ('paths' in enqueued) {
      for (const q of hold.queues) known.saw(q.path);
      return { paths: enqueued.paths, madeAt: enqueued.madeAt, firstLook };
    }
    if (tried >= tries) throw new NodeError(store.name, `could not enqueue: its queues were made and deleted under it ${tried} times`);
    if ('missing' in enqueued) known.forget(enqueued.missing);
    if ('exists' in enqueued) known.saw(enqueued.exists);
    if ('rootMissing' in enqueued) await store.createRoot(enqueued.rootMissing);
  }
}

/** How many failed writes an acquire tolerates beyond two per queue (a guess corrected once each way). */
const MAX_WRONG_GUESSES = 3;

/**
 * Step 2: until nothing is in our way in any queue. `sentAt`: the last round trip that found us in line.
 * `madeAt`: per queue, the zxid of the write that made it with our znode (no look needed: ours is its first
 * child). `firstLook`: the first queue's children, read with the create (and when that was sent), if it was.
 *
 * The fence: the greatest `pzxid` (the zxid of the queue's last child created or deleted) among the looks
 * that let us through, one per queue. Every earlier holder's znode was created before that look and was gone
 * by it (or its deletion is the look's pzxid), so every earlier holder looked before a zxid this one is at
 * least; every later holder looks after our znode's deletion, a later zxid still. A queue we made counts with
 * the zxid of the write that made it, which is its pzxid then: every earlier holder's znode was deleted, and
 * its queue after it, before that write. Strictly increasing per resource, from the ensemble's log, with no
 * write of its own (docs/fencing.md).
 */
async function takeTurn(
  call: Call,
  session: Session,
  paths: readonly string[],
  madeAt: ReadonlyArray<bigint | undefined>,
  firstLook: { sentAt: number; look: Look | undefined },
): Promise<{ sentAt: number; fence: bigint } | 'expired'> {
  const { store, hold, o } = call;
  let retries = 0;
  let sentAt = firstLook.sentAt;
  let fence = 0n;
  let looked: Look | undefined = firstLook.look;
  for (const [i, queue] of hold.queues.entries()) {
    const made = madeAt[i];
    if (made !== undefined) {
      if (made > fence) fence = made;
      continue;
    }
    const mine = Number((paths[i] as string).slice(-10));
    // Bounded: each pass waits for one change in this queue, or ends the call.
    for (let failures = 0; ;) {
      let woke: 'changed' | 'expired';
      try {
        let look = looked;
        looked = undefined;
        if (look === undefined) {
          sentAt = monotonicNow();
          look = await store.list(queue.path);
        }
        const all = ordered(look?.names ?? []);
        if (!look || !all.some((c) => c.seq === mine)) return 'expired'; // our znode is gone: the session ended
        const inWay = blocker(
          queue,
          all.filter((c) => c.seq < mine),
        );
        if (inWay === null) {
          if (look.pzxid > fence) fence = look.pzxid;
          break;
        }
        if (o.timeout === 0) throw new LockTimeoutError(hold.resources, 0, 'held by others');
        woke = await waitForChange(call, session, queue, inWay);
      } catch (error) {
        if (!(error instanceof NodeError)) throw error;
        // Our place is kept by the session meanwhile: look again after the pause.
        await pauseAfterFailure(call, quorumError(hold.resources, 'acquire', store, error), failures++);
        continue;
      }
      if (woke === 'expired') return 'expired';
      failures = 0;
      call.onRetry({ resources: hold.resources, attempt: ++retries, reason: 'notified', waited: monotonicNow() - call.started });
    }
  }
  return { sentAt, fence };
}

/**
 * Until the child in our way goes (or, for 'any', the queue's children change), the session expires, the
 * deadline passes (LockTimeoutError) or the signal aborts.
 */
async function waitForChange(call: Call, session: Session, queue: Queue, inWay: Child | 'any'): Promise<'changed' | 'expired'> {
  const { store, hold, signal } = call;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  let stopExpiry: (() => void) | undefined;
  try {
    return await new Promise<'changed' | 'expired'>((resolve, reject) => {
      onAbort = () => reject(signal.reason);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      stopExpiry = store.onExpiry((id) => id === session.id && resolve('expired'));
      timer = setTimeout(
        () => reject(new LockTimeoutError(hold.resources, call.o.timeout, 'held by others')),
        Math.max(0, call.deadline - monotonicNow()),
      );
      const changed = (): void => resolve('changed');
      const watch =
        inWay === 'any'
          ? store.children(queue.path, changed).then(() => undefined)
          : store.exists(`${queue.path}/${inWay.name}`, changed).then((stat) => {
              if (!stat) resolve('changed'); // gone before the watch was set
            });
      watch.catch(reject);
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
    stopExpiry?.();
  }
}

/** Whether every one of the grant's znodes is still there, owned by its session. */
async function stillHeld(store: ZooKeeperStore, grant: ZooKeeperGrant): Promise<boolean> {
  const session = await store.session();
  if (session.id !== grant.sessionId) return false;
  const stats = await Promise.all(grant.paths.map((p) => store.exists(p)));
  return stats.every((s) => s !== null && s.ephemeralOwner.toString('hex') === grant.sessionId);
}

/**
 * Extend: the session is the lease, kept alive by the client's pings; extending checks in one round trip
 * that our znodes are still there, and dates the validity from it (at most the session's timeout).
 */
export async function extend(
  store: ZooKeeperStore,
  grant: ZooKeeperGrant,
  ttl: number,
): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
  const sentAt = monotonicNow();
  try {
    if (!(await stillHeld(store, grant))) return { failures: [], extended: 0 };
    return { grant: { ...grant, ttl: Math.min(ttl, grant.sessionTimeout), validUntil: validFrom(sentAt, ttl, grant.sessionTimeout) } };
  } catch (error) {
    store.failures.tell(error, 'extend', grant.resources);
    return { failures: [{ node: store.name, error: error as Error }], extended: 0 };
  }
}

/**
 * Calls `lost` once one of the grant's znodes is deleted (forceRelease, an operator) or its session
 * expires. A watch that cannot be set leaves loss to the extensions.
 */
export function watchLoss(store: ZooKeeperStore, grant: ZooKeeperGrant, lost: (reason: string) => void): () => void {
  let stopped = false;
  const tell = (reason: string): void => {
    if (stopped) return;
    stopped = true;
    lost(reason);
  };
  const stopExpiry = store.onExpiry((id) => id === grant.sessionId && tell('its ZooKeeper session expired'));
  const watch = (path: string): void => {
    if (stopped) return;
    store
      .exists(path, () => watch(path)) // one-shot: look again on every event
      .then((stat) => {
        if (!stat) tell('its znode was deleted');
      })
      .catch(() => undefined);
  };
  for (const path of grant.paths) watch(path);
  return () => {
    stopped = true;
    stopExpiry();
  };
}

/**
 * Deletes `paths`; how many were there. A queue this leaves empty stays for the sweep (sweep.ts): deleting it
 * here would cost a write now and another when the resource is next locked, and the sweep deletes it anyway.
 */
async function removeAll(store: ZooKeeperStore, paths: readonly string[]): Promise<number> {
  const removed = await Promise.all(paths.map((p) => store.remove(p)));
  return removed.filter(Boolean).length;
}

/** Deletes every znode of ours (by the protection id in its name) in `queues`; how many were there. */
async function removeOurs(store: ZooKeeperStore, queues: readonly Queue[], protectedId: string): Promise<number> {
  const counts = await Promise.all(
    queues.map(async (q) => {
      const names = (await store.children(q.path)) ?? [];
      return removeAll(
        store,
        names.filter((n) => isOurs(n, protectedId)).map((n) => `${q.path}/${n}`),
      );
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** How often a delete the ensemble refused is tried again in the background: about 10 minutes at most. */
const MAX_DELETE_RETRIES = 600;

/**
 * Curator's guaranteed delete. Our znodes must go even when the ensemble cannot answer right now (a delete
 * sent during a leader election fails at once): one left behind, owned by a session that lives on, would
 * block its queue for as long as this manager runs, its own next acquire included. Tried now; if that
 * fails, again in the background (after 100 ms, doubling to 1 s) until it succeeds, the session ends (its
 * znodes go with it) or the manager closes. Resolves with how many znodes the first try deleted. The first
 * failure is told to the manager (nodeError, as `operation` on `resources`).
 */
async function removeForSure(
  store: ZooKeeperStore,
  sessionId: string,
  remove: () => Promise<number>,
  operation: string,
  resources: readonly string[],
): Promise<number> {
  try {
    return await remove();
  } catch (error) {
    store.failures.tell(error, operation, resources);
    void (async () => {
      for (
        let tries = 0, pause = 100;
        tries < MAX_DELETE_RETRIES && (await store.holds(sessionId));
        tries++, pause = Math.min(pause * 2, 1_000)
      ) {
        await new Promise((r) => setTimeout(r, pause));
        try {
          await remove();
          return;
        } catch {
          // The ensemble still cannot answer: again after the pause.
        }
      }
    })();
    return 0;
  }
}

/**
 * Release: delete our znodes (for sure: see removeForSure); the waiter behind each is told by its watch. Their
 * queues are known to be there until a sweep finds them empty: the next acquire sends the plain create.
 */
export async function release(
  store: ZooKeeperStore,
  known: KnownQueues,
  grant: ZooKeeperGrant,
): Promise<{ released: number; nodes: number }> {
  const removed = await removeForSure(store, grant.sessionId, () => removeAll(store, grant.paths), 'release', grant.resources);
  for (const path of grant.paths) known.saw(path.slice(0, path.lastIndexOf('/')));
  return { released: removed > 0 ? 1 : 0, nodes: 1 };
}
