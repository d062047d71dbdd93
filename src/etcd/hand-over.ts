// A hand-over inside one process, without the waiter's own round trips. When a holder releases a key that
// a waiter of the same manager watches (the waiter right behind it in the queue), the release transaction
// also reads the queue's first key, and the waiter's lease is renewed beside it. If that first key is the
// waiter's own, still on its lease, the waiter holds from the release's revision on: at that revision its key
// exists and is first in the queue, so it lies inside its turn, exactly what the waiter's own look would
// have found (docs/fencing.md). The waiter's watch event and its look (a read and a renewal) leave the
// hand-over's path: what is left there is the release's one write, with the renewal beside it.
//
// Only a waiter in one queue (a lock on one resource, a semaphore permit or a read or write hold of one
// name) that waits for one key's deletion is served so. Anything else, or a release that finds another key
// first (a foreign waiter, an `etcdctl lock`), tells the waiter to look again as its watch would have.
import type { IKeyValue } from './etcd3-types.js';

/** Why a waiter stops waiting for a key: it holds (from `fence` on, valid from `renewedAt`), or it should look again. */
export type HandOver = { readonly fence: bigint; readonly renewedAt: number } | 'look again';

/** A waiter of this process, waiting for one key's deletion. */
export interface LocalWaiter {
  /** its own key in the queue, and the lease it hangs on */
  readonly key: Buffer;
  readonly leaseId: string;
  /** called once, by the release of the key it waits for */
  readonly settle: (handOver: HandOver) => void;
  /** true from the moment a release of this process claimed the waiter (it ignores its watch from then) */
  claimed: boolean;
}

export class LocalHandOvers {
  /** waiters by the key they wait for (each key has at most one waiter right behind it) */
  readonly #byKey = new Map<string, LocalWaiter>();

  /** Registers a waiter for `awaited`'s deletion; returns how to unregister it. */
  wait(awaited: Buffer, waiter: LocalWaiter): () => void {
    const name = awaited.toString('latin1');
    this.#byKey.set(name, waiter);
    return () => {
      if (this.#byKey.get(name) === waiter) this.#byKey.delete(name);
    };
  }

  /**
   * The waiter for `released`, claimed for this release (its watch event is ignored from now on), or undefined.
   * The release must then settle it, whatever happens.
   */
  claim(released: Buffer): LocalWaiter | undefined {
    const name = released.toString('latin1');
    const waiter = this.#byKey.get(name);
    if (!waiter) return undefined;
    this.#byKey.delete(name);
    waiter.claimed = true;
    return waiter;
  }
}

/** Whether `first`, the queue's first key at the release's revision, is the waiter's own key on its own lease. */
export function isFirst(waiter: LocalWaiter, first: IKeyValue | undefined): boolean {
  return first !== undefined && first.key.equals(waiter.key) && BigInt(first.lease) === BigInt(waiter.leaseId);
}
