// etcd's own lock recipe (client/v3/concurrency/mutex.go), for one or several queues at once:
//
//   1. a lease           of the lock's ttl, rounded up to whole seconds: an idle one of this manager's
//                        (leases.ts; renewed in the same breath as step 2), else a new grant
//   2. enqueue           one transaction puts a key `<queue prefix><lease id>` in every queue, attached to the
//                        lease, and reads each queue's first keys: the create revision orders the waiters
//   3. wait (takeTurn)   per queue, watch the deletion of the key just before ours until none is in the way
//                        (FIFO, one release wakes one waiter); the lease is kept alive meanwhile. Each look
//                        is a read-only transaction that also checks all our keys still hang on our lease
//   release              one transaction deletes our keys (if they are still ours): the lease goes back to
//                        the manager's idle leases. Uncontended, a lock is 2 writes, the floor. The waiter
//                        of this process right behind our key may hold at once (hand-over.ts)
//   passOn               a mutex's next caller in this process's line (local-line.ts) holds with one write:
//                        our key put again with its token, on the same lease, if nobody else is queued
//
// The fence is a revision of the cluster: strictly increasing and linearizable, taken from inside the
// holder's turn (a revision at which its keys exist and are first in their queues). A holder that got its
// turn at once holds from its create revision on: that is its fence. One that waited takes the revision of
// the read that found it first with its keys in place: no write (earlier versions re-wrote their keys for
// it). One handed the lock in this process takes the revision of the hand-over's transaction, when that
// transaction found (or made) its key first. Its create revision would not do: it lies before its turn, and a holder before it may carry a fence
// from inside its own turn that is greater (docs/fencing.md). No write-back, no trust rule, no quarantine:
// a member that lost its data rejoins by Raft, not by fencelock.
import type { ICompare, IKeyValue, IRequestOp } from './etcd3-types.js';
import type { Grant, RetryInfo, WaitResult } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { callClock, orAbort, pauseAfterFailure, TOO_SLOW, untilGranted, type CallClock, type ConsensusHold } from '../consensus-call.js';
import { LockTimeoutError, NodeError, QuorumError, type NodeFailure } from '../errors.js';
import { driftOf, type ResolvedAcquire } from '../options.js';
import { randomHex } from '../random.js';
import { isFirst, type HandOver, type LocalHandOvers, type LocalWaiter } from './hand-over.js';
import type { Lease, LeasePool } from './leases.js';
import { blocker, keyValue, lookBack, window, type Queue } from './queue.js';
import type { EtcdStore, KeyWatch } from './store.js';

/** The longest delay setTimeout takes (a longer one fires at once). */
export const MAX_DELAY = 2 ** 31 - 1;

/** What a lease loses to the leader's clock running fast: the Redis default's allowance (not an option on etcd). */
const DRIFT_FACTOR = 0.01;
const drift = (ttl: number): number => driftOf(ttl, DRIFT_FACTOR);

/** An etcd grant: the lease its keys hang on. */
export interface EtcdGrant extends Grant {
  readonly leaseId: string;
  /** the lease's ttl on the server, s (at least the ttl asked for: whole seconds, and the server's minimum) */
  readonly leaseSeconds: number;
  /** the lease length asked for, s: the idle leases it joins after the release */
  readonly leaseAsked: number;
  readonly keys: readonly Buffer[];
  /** each key's value (the owner token, after `r `/`w ` in a read-write lock): a release deletes only its own */
  readonly values: readonly Buffer[];
  /** the create revision of its keys (all made in one transaction) */
  readonly created: string;
  /** monotonic ms just before the lease's last known renewal (or grant): it lives `leaseSeconds` from then at least */
  readonly renewedAt: number;
}

/** `<prefix><lease id in hex>`: one key per lease per queue. */
function keyIn(queue: Queue, leaseId: string): Buffer {
  return Buffer.from(`${queue.prefix}${BigInt(leaseId).toString(16)}`);
}

/** The end of a key range covering every key that starts with `prefix`. */
export function prefixEnd(prefix: string | Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = (end[end.length - 1] as number) + 1;
  return end;
}

/** The QuorumError for a failed step; the manager hears of the failure too (its nodeError event). */
const quorumError = (resources: readonly string[], operation: string, store: EtcdStore, error: unknown): QuorumError =>
  store.failures.quorumError(resources, operation, error);

/** What one acquire call asks: its queues (one per resource), and what names it in messages. */
export type Hold = ConsensusHold<Queue>;

/** One acquire call: what each of its steps needs. */
interface Call extends CallClock {
  readonly store: EtcdStore;
  readonly pool: LeasePool;
  readonly handOvers: LocalHandOvers;
  readonly hold: Hold;
  readonly onRetry: (info: RetryInfo) => void;
  /** this call's owner token: the value of its keys */
  readonly token: string;
}

/**
 * Waits until this call holds a place at the front of every queue, or its timeout passes
 * (LockTimeoutError), or the signal aborts. Whatever it put in etcd goes with its lease on failure.
 */
export function acquire(
  store: EtcdStore,
  local: { readonly pool: LeasePool; readonly handOvers: LocalHandOvers },
  hold: Hold,
  o: ResolvedAcquire,
  signal: AbortSignal,
  onRetry: (info: RetryInfo) => void,
): Promise<WaitResult> {
  const call: Call = { ...callClock(o, signal), store, ...local, hold, onRetry, token: randomHex(18) };
  return untilGranted({ ...call, resources: hold.resources }, () => attempt(call));
}

/** One pass: a lease, our keys, our turn. Why not, when it ended without a grant to keep (start over). */
async function attempt(call: Call): Promise<EtcdGrant | string> {
  const { store, pool, hold, o } = call;
  const sentAt = monotonicNow();
  const asked = Math.ceil(o.ttl / 1000);
  const idle = pool.take(asked);
  const lease = idle ?? (await grantLease(call, asked));
  try {
    // An idle lease is renewed beside the enqueue: the hold's validity counts from before that renewal.
    const turn = await takeTurn(call, lease, idle !== undefined);
    if (turn === 'lease-ended') return 'its place in the queue lapsed';
    const grant: EtcdGrant = {
      resources: hold.resources,
      token: call.token,
      fence: turn.fence,
      ttl: o.ttl,
      // From just before the lease was granted or last renewed: the server's lease outlives it.
      validUntil: (turn.renewedAt ?? sentAt) + o.ttl - drift(o.ttl),
      renewedAt: turn.renewedAt ?? sentAt,
      leaseId: lease.id,
      leaseSeconds: lease.ttl,
      leaseAsked: asked,
      keys: hold.queues.map((q) => keyIn(q, lease.id)),
      values: hold.queues.map((q) => Buffer.from(keyValue(q, call.token))),
      created: turn.created,
      ops: hold.ops,
    };
    if (grant.validUntil > monotonicNow()) return grant;
    // The pass outlasted the lease (a frozen member, an election): given back, and tried again while the call has time.
    await store.revoke(lease.id).catch(() => undefined);
    return TOO_SLOW;
  } catch (error) {
    // Our keys go with the lease: nobody waits behind a caller that gave up. After a store failure the revoke
    // is not waited for: it is a write, and one that meets the same election can take the store's whole
    // timeout (a follower forwards it to the dead leader and hears nothing), which held the next attempt back
    // by 2 s more (issue 23: a leader-kill window of 4 s where 2 s was usual). Unwaited, it still runs (the
    // lease is nobody's now: it is never lent again), and the keys go at the lease's ttl if it fails.
    // Nor after an abort (the manager closing, the caller's signal): the caller hears of it at once.
    const revoking = store.revoke(lease.id).catch(() => undefined);
    if (!(error instanceof QuorumError) && !call.signal.aborted) await revoking;
    throw error;
  }
}

/** Step 1, when no idle lease will do. */
async function grantLease({ store, hold }: Call, seconds: number): Promise<Lease> {
  try {
    return await store.grant(seconds);
  } catch (error) {
    throw quorumError(hold.resources, 'acquire', store, error);
  }
}

type Turn = { fence: bigint; renewedAt: number | undefined; created: string } | 'lease-ended';

/** Steps 2 and 3. `renew`: the lease was idle, renew it beside the enqueue (its keys need it alive). */
async function takeTurn(call: Call, lease: Lease, renew: boolean): Promise<Turn> {
  const { store, hold, o, token } = call;
  const { queues, resources } = hold;
  const keys = queues.map((q) => keyIn(q, lease.id));
  const renewal = renew ? store.keepAlive(lease.id) : undefined;
  renewal?.catch(() => undefined); // awaited below where it matters; a waiter renews again before it holds
  let mine: string;
  let first: IKeyValue[][];
  try {
    ({ mine, first } = await orAbort(enqueue(store, queues, keys, token, lease.id), call.signal));
  } catch (error) {
    if (call.signal.aborted) throw call.signal.reason as Error;
    // An idle lease that ended after all (it outlived its estimate less than we thought): start over.
    if (renew && /lease not found/i.test(String((error as Error).message))) return 'lease-ended';
    throw quorumError(resources, 'acquire', store, error);
  }
  const ahead = (kvs: readonly IKeyValue[] | undefined): IKeyValue[] =>
    (kvs ?? []).filter((kv) => BigInt(kv.create_revision) < BigInt(mine));
  if (queues.every((q, i) => blocker(q, ahead(first[i])) === null)) {
    if (renewal) {
      const left = await renewal.catch((error: unknown) => {
        throw quorumError(resources, 'acquire', store, error);
      });
      if (left <= 0) return 'lease-ended';
    }
    return { fence: BigInt(mine), renewedAt: undefined, created: mine };
  }
  if (o.timeout === 0) throw new LockTimeoutError(resources, 0, 'held by others');
  // A waiter in one queue can be handed its turn by a release of this process (hand-over.ts).
  const handOvers = queues.length === 1 ? { registry: call.handOvers, key: keys[0] as Buffer, leaseId: lease.id } : undefined;
  const waiting = new Waiting(store, lease.id, o.ttl, call.deadline, call.signal, handOvers);
  try {
    let retries = 0;
    let turn: Turn = 'lease-ended';
    for (const queue of queues) {
      // Bounded: each pass waits for one deletion in this queue, or ends the call.
      for (let failures = 0; ;) {
        let woke: 'deleted' | 'lease-ended' | HandOver;
        try {
          const look = await waiting.guard(lookAt(store, queue, mine, keys, lease.id), resources);
          if (look === 'lease-ended') return 'lease-ended';
          const inWay = blocker(queue, look.before);
          if (inWay === null) {
            turn = { fence: BigInt(look.revision), renewedAt: look.renewedAt, created: mine };
            break;
          }
          woke = await waiting.forDeletion(queue, inWay, look.revision, resources, o.timeout);
        } catch (error) {
          // Our place is kept by the lease's renewals meanwhile: look again after the pause.
          await pauseAfterFailure(call, error, failures++);
          continue;
        }
        if (woke === 'lease-ended') return 'lease-ended';
        failures = 0;
        call.onRetry({ resources, attempt: ++retries, reason: 'notified', waited: monotonicNow() - call.started });
        if (woke !== 'deleted' && woke !== 'look again') {
          // Handed over by a release of this process: first in its only queue, at the release's revision.
          turn = { ...woke, created: mine };
          break;
        }
      }
    }
    // The last look found us first in the last queue, with all our keys in place; we became first in the
    // others earlier, and nobody can queue before a key that exists. That look's revision is inside our turn.
    return turn;
  } finally {
    waiting.stop();
  }
}

/** Step 2: our key in every queue, and each queue's first keys, in one transaction. */
async function enqueue(
  store: EtcdStore,
  queues: readonly Queue[],
  keys: readonly Buffer[],
  token: string,
  leaseId: string,
): Promise<{ mine: string; first: IKeyValue[][] }> {
  const puts: IRequestOp[] = queues.map((q, i) => ({
    request_put: { key: keys[i], value: Buffer.from(keyValue(q, token)), lease: leaseId },
  }));
  const reads: IRequestOp[] = queues.map((q) => ({
    request_range: {
      key: Buffer.from(q.prefix),
      range_end: prefixEnd(q.prefix),
      sort_target: 'Create',
      sort_order: 'Ascend',
      limit: window(q),
    },
  }));
  const res = await store.txn('enqueue', {
    compare: keys.map((key) => ({ key, target: 'Create', result: 'Equal', create_revision: 0 })),
    success: [...puts, ...reads],
    failure: [],
  });
  if (!res.succeeded) throw new NodeError(store.name, 'a new lease id was already in use as a key (someone writes under our prefix)');
  const first = res.responses.slice(queues.length).map((r) => r.response_range.kvs);
  return { mine: String(res.header.revision), first };
}

/**
 * One look at a queue, in one read-only transaction (a linearizable read, no write): whether all our keys
 * still hang on our lease, and the keys of `queue` created before ours (the last one only where that is all
 * that matters), ascending. The lease is renewed beside it: should this look find us first, the lock's
 * validity counts from just before it. 'lease-ended': a key of ours is gone (the lease ended, was revoked,
 * or an operator deleted it).
 */
async function lookAt(
  store: EtcdStore,
  queue: Queue,
  mine: string,
  keys: readonly Buffer[],
  leaseId: string,
): Promise<{ before: IKeyValue[]; revision: string; renewedAt: number } | 'lease-ended'> {
  const renewedAt = monotonicNow();
  const [res, left] = await Promise.all([
    store.txn('read the queue', {
      compare: keys.map((key) => ({ key, target: 'Lease', result: 'Equal', lease: leaseId })),
      success: [
        {
          request_range: {
            key: Buffer.from(queue.prefix),
            range_end: prefixEnd(queue.prefix),
            max_create_revision: String(BigInt(mine) - 1n),
            sort_target: 'Create',
            sort_order: 'Descend',
            limit: lookBack(queue),
            keys_only: queue.kind.kind === 'semaphore',
          },
        },
      ],
      failure: [],
    }),
    store.keepAlive(leaseId),
  ]);
  if (!res.succeeded || left <= 0) return 'lease-ended';
  const before = [...(res.responses[0]?.response_range.kvs ?? [])].reverse();
  return { before, revision: String(res.header.revision), renewedAt };
}

/** What a waiter in one queue needs to be handed its turn by a release of this process. */
interface HandOverPlace {
  readonly registry: LocalHandOvers;
  /** the waiter's key and lease */
  readonly key: Buffer;
  readonly leaseId: string;
}

/**
 * One waiter's wait: the deadline, the signal, and its lease kept alive (every third of its ttl) so that
 * its place outlives a long wait. Ends as 'lease-ended' when the lease is gone all the same.
 */
class Waiting {
  #renewal: NodeJS.Timeout | undefined;
  #leaseEnded = false;
  #wake: (() => void) | undefined;

  constructor(
    private readonly store: EtcdStore,
    private readonly leaseId: string,
    ttl: number,
    private readonly deadline: number,
    private readonly signal: AbortSignal,
    private readonly place: HandOverPlace | undefined,
  ) {
    this.#renewal = setInterval(
      () => {
        store.keepAlive(leaseId).then(
          (left) => {
            if (left > 0) return;
            this.#leaseEnded = true;
            this.#wake?.();
          },
          () => undefined, // a member or the leader down: the next renewal tries again, the key outlives a blip
        );
      },
      Math.max(500, Math.floor(ttl / 3)),
    );
    this.#renewal.unref();
  }

  /** `work`, turning a store error into a QuorumError for these resources; the signal's reason once it aborts. */
  async guard<T>(work: Promise<T>, resources: readonly string[]): Promise<T> {
    try {
      return await orAbort(work, this.signal);
    } catch (error) {
      if (this.signal.aborted) throw this.signal.reason as Error;
      throw quorumError(resources, 'acquire', this.store, error);
    }
  }

  /**
   * Until `key` (or, for 'any', a key of the queue) is deleted after `revision`; LockTimeoutError at the
   * deadline. A release of this process may hand the turn over instead (hand-over.ts), or tell it to look again.
   */
  async forDeletion(
    queue: Queue,
    key: IKeyValue | 'any',
    revision: string,
    resources: readonly string[],
    timeout: number,
  ): Promise<'deleted' | 'lease-ended' | HandOver> {
    if (this.#leaseEnded) return 'lease-ended';
    let started: Promise<KeyWatch> | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let unregister: (() => void) | undefined;
    try {
      return await new Promise<'deleted' | 'lease-ended' | HandOver>((resolve, reject) => {
        const from = String(BigInt(revision) + 1n);
        const local: LocalWaiter | undefined =
          this.place && key !== 'any' ? { key: this.place.key, leaseId: this.place.leaseId, settle: resolve, claimed: false } : undefined;
        // Once a release of this process claimed us, it settles the wait: the watch's news of it comes too.
        const deleted = (): void => {
          if (!local?.claimed) resolve('deleted');
        };
        const failed = (error: Error): void => reject(quorumError(resources, 'acquire', this.store, error));
        this.#wake = () => resolve('lease-ended');
        onAbort = () => reject(this.signal.reason);
        if (this.signal.aborted) return onAbort();
        this.signal.addEventListener('abort', onAbort, { once: true });
        // No timer for a wait longer than setTimeout takes (timeout: Infinity waits until the signal aborts).
        const left = Math.max(0, this.deadline - monotonicNow());
        if (left <= MAX_DELAY) timer = setTimeout(() => reject(new LockTimeoutError(resources, timeout, 'held by others')), left);
        if (local && key !== 'any') unregister = this.place?.registry.wait(key.key, local);
        started =
          key === 'any'
            ? this.store.watchDeletes({ prefix: Buffer.from(queue.prefix) }, from, deleted, failed)
            : this.store.watchDeletes({ key: key.key }, from, deleted, failed);
        started.catch(failed);
      });
    } finally {
      unregister?.();
      clearTimeout(timer);
      if (onAbort) this.signal.removeEventListener('abort', onAbort);
      this.#wake = undefined;
      // A watch still starting when the wait ended is stopped as soon as it exists.
      started?.then(
        (w) => w.stop(),
        () => undefined,
      );
    }
  }

  stop(): void {
    clearInterval(this.#renewal);
  }
}

/**
 * Extend: renew the lease (its ttl is fixed when granted, so a longer ttl renews it to the granted one) and
 * check in the same breath that our keys still hang on it (an operator may have deleted one). One round trip.
 * The check reads one of the keys as well: etcd serves a transaction of compares alone as a serializable read,
 * from whichever member answers, which may not have applied our own acquire yet (an extend 18 ms after the
 * acquire was told its key was gone, 9 times in 480 such pairs on 3 local members) or a delete that took the
 * key since. A range that is not serializable makes the whole check a linearizable read.
 */
export async function extend(
  store: EtcdStore,
  grant: EtcdGrant,
  ttl: number,
): Promise<{ grant: Grant } | { failures: NodeFailure[]; extended: number }> {
  const sentAt = monotonicNow();
  const granted = Math.min(ttl, grant.leaseSeconds * 1000);
  try {
    const [left, held] = await Promise.all([
      store.keepAlive(grant.leaseId),
      store.txn('check the lock', {
        compare: owned(grant),
        success: [{ request_range: { key: grant.keys[0] as Buffer, count_only: true } }],
        failure: [],
      }),
    ]);
    if (left <= 0 || !held.succeeded) return { failures: [], extended: 0 };
    const extended: EtcdGrant = { ...grant, ttl: granted, validUntil: sentAt + granted - drift(granted), renewedAt: sentAt };
    return { grant: extended };
  } catch (error) {
    store.failures.tell(error, 'extend', grant.resources);
    return { failures: [{ node: store.name, error: error as Error }], extended: 0 };
  }
}

/** Compares that hold while the grant's keys are still its own: on its lease, with its token (a lease may pass on). */
function owned(grant: EtcdGrant): ICompare[] {
  return grant.keys.flatMap((key, i) => [
    { key, target: 'Lease' as const, result: 'Equal' as const, lease: grant.leaseId },
    { key, target: 'Value' as const, result: 'Equal' as const, value: grant.values[i] },
  ]);
}

/**
 * The mutex's next holder in this process, with one write (local-line.ts): `held`'s key put again with
 * `next`'s token on the same lease, only if no other key is in the queue (every key was created no later than
 * ours). Its revision is the fence: the key exists and is first there. The lease is renewed beside it unless
 * its last renewal is more recent than RENEWED_SHARE of the next holder's ttl: that holder's validity counts
 * from the last renewal, so it starts with at least 95% of its ttl (less the drift) and the hand-over's path
 * is one write. null when another key is queued or the key is no longer `held`'s: `held` is then released as usual.
 */
export async function passOn(store: EtcdStore, held: EtcdGrant, next: { token: string; ttl: number }): Promise<EtcdGrant | null> {
  const key = held.keys[0] as Buffer;
  const prefix = queuePrefixOf(key);
  const now = monotonicNow();
  const renewal = now - held.renewedAt > next.ttl * RENEWED_SHARE ? store.keepAlive(held.leaseId) : undefined;
  renewal?.catch(() => undefined); // awaited below
  const res = await store.txn('hand the lock over', {
    compare: [
      ...owned(held),
      { key: prefix, range_end: prefixEnd(prefix), target: 'Create', result: 'Less', create_revision: String(BigInt(held.created) + 1n) },
    ],
    success: [{ request_put: { key, value: Buffer.from(next.token), lease: held.leaseId } }],
    failure: [],
  });
  if (!res.succeeded) return null;
  // The lease outlives its last renewal by leaseSeconds, at least the next holder's ttl (the same lease length).
  const renewedAt = renewal && (await renewal.catch(() => 0)) > 0 ? now : held.renewedAt;
  const validUntil = renewedAt + next.ttl - drift(next.ttl);
  const grant: EtcdGrant = {
    ...held,
    token: next.token,
    values: [Buffer.from(next.token)],
    fence: BigInt(res.header.revision),
    ttl: next.ttl,
    validUntil,
    renewedAt,
  };
  if (validUntil > monotonicNow()) return grant;
  await store.revoke(held.leaseId).catch(() => undefined); // no validity left: revoked, nobody holds
  return null;
}

/** How old (a share of the ttl) a lease's last renewal may be for a hand-over in the process to skip renewing it. */
const RENEWED_SHARE = 0.05;

/** The queue a key is in: all of it up to its last `/` (a lease id in hex follows). */
const queuePrefixOf = (key: Buffer): Buffer => key.subarray(0, key.lastIndexOf('/') + 1);

/**
 * Calls `lost` once any of the grant's keys is deleted after it was granted (its lease revoked by
 * forceRelease, or ended; an operator's delete). Watches from the grant's fence on, so a deletion between the
 * grant and the watch's start is not missed. A watch that cannot start or breaks leaves loss to the renewals.
 */
export function watchLoss(store: EtcdStore, grant: EtcdGrant, lost: (reason: string) => void): () => void {
  let stopped = false;
  const onDelete = (): void => {
    if (!stopped) lost('its key in etcd was deleted (its lease was revoked or ended, or the key was deleted)');
  };
  const from = String(grant.fence + 1n);
  const watches = grant.keys.map((key) => {
    const watch = store.watchDeletes({ key }, from, onDelete, () => undefined);
    // A watch that cannot start (the cluster out of reach) leaves loss to the renewals: not an unhandled rejection.
    watch.catch(() => undefined);
    return watch;
  });
  return () => {
    stopped = true;
    for (const w of watches)
      w.then(
        (watch) => watch.stop(),
        () => undefined,
      );
  };
}

/**
 * Release: one transaction deletes our keys, if they all still hang on our lease (the waiter behind each is
 * told by its watch), and the lease joins the manager's idle ones, for the next lock: no revoke, no grant.
 * A key of ours already gone (forceRelease, an operator, the lease ended): the lease is revoked instead, and
 * whatever is left of the lock goes with it. When the waiter behind our key is of this process, the same
 * transaction reads the queue's first key and its lease is renewed beside it: it may hold at once (hand-over.ts).
 */
export async function release(
  store: EtcdStore,
  { pool, handOvers }: { readonly pool: LeasePool; readonly handOvers: LocalHandOvers },
  grant: EtcdGrant,
): Promise<{ released: number; nodes: number }> {
  const next = grant.keys.length === 1 ? handOvers.claim(grant.keys[0] as Buffer) : undefined;
  const renewedAt = monotonicNow();
  const renewal = next ? store.keepAlive(next.leaseId) : undefined;
  renewal?.catch(() => undefined); // awaited in handOver
  let res;
  try {
    res = await store.txn('release the lock', {
      compare: owned(grant),
      success: [...grant.keys.map((key) => ({ request_delete_range: { key } })), ...(next ? [firstKeyOf(grant.keys[0] as Buffer)] : [])],
      failure: [],
    });
  } catch (error) {
    next?.settle('look again');
    // Not lost for good: the lease ends on the server at its ttl, and the waiter behind gets the lock then.
    store.failures.tell(error, 'release', grant.resources);
    return { released: 0, nodes: 1 };
  }
  if (res.succeeded) {
    pool.giveBack(grant.leaseAsked, { id: grant.leaseId, ttl: grant.leaseSeconds }, grant.validUntil);
    if (next && renewal)
      void handOver(next, res.responses[grant.keys.length]?.response_range.kvs[0], res.header.revision, renewal, renewedAt);
    return { released: 1, nodes: 1 };
  }
  next?.settle('look again');
  const revoked = await store.revoke(grant.leaseId).catch((error: unknown) => {
    store.failures.tell(error, 'release', grant.resources);
    return false;
  });
  return { released: revoked ? 1 : 0, nodes: 1 };
}

/** A read of the first key (by create revision) of the queue `key` is in: the queue's prefix is all of it up to its last `/`. */
function firstKeyOf(key: Buffer): IRequestOp {
  const prefix = queuePrefixOf(key);
  return { request_range: { key: prefix, range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend', limit: 1 } };
}

/**
 * The waiter behind a released key holds from the release's revision when the queue's first key then was its
 * own on its lease, and its lease was renewed beside the release (its validity counts from just before).
 */
async function handOver(
  next: LocalWaiter,
  first: IKeyValue | undefined,
  revision: string,
  renewal: Promise<number>,
  renewedAt: number,
): Promise<void> {
  if (!isFirst(next, first)) return next.settle('look again');
  const left = await renewal.catch(() => 0);
  next.settle(left > 0 ? { fence: BigInt(revision), renewedAt } : 'look again');
}

/** The keys of a queue in order (first = holder), the revision they were read at. */
export async function queueKeys(store: EtcdStore, queue: Queue): Promise<IKeyValue[]> {
  const res = await store.range('read the queue', {
    key: Buffer.from(queue.prefix),
    range_end: prefixEnd(queue.prefix),
    sort_target: 'Create',
    sort_order: 'Ascend',
  });
  return res.kvs;
}
