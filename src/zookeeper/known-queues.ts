// The queues a manager knows to exist, so that its next acquire of one sends the cheapest create: a queue's
// znode that exists takes our znode in one create; a missing one is made together with our znode in one
// transaction. Guessing wrong costs one failed write (ZooKeeper logs a failed create or transaction as a
// write too) and the right request after it, so the guess only has to be good, not exact:
// - a queue is known from the moment an acquire's znode was created in it until `maxAge` after its last
//   release: once empty, a sweep (ours or another manager's, sweep.ts) deletes it, most likely within that;
// - our own sweep forgets what it deletes;
// - at most `limit` queues are kept, the least recently used forgotten first: bounded memory, whatever the
//   number of resources.
import { monotonicNow } from '../clock.js';

/** How many queues a manager remembers: a path of ~100 bytes each, well under a megabyte. */
export const KNOWN_QUEUES_LIMIT = 4_096;

export class KnownQueues {
  /** queue path → when it was last seen in use (monotonic ms); in order of that, oldest first */
  readonly #seen = new Map<string, number>();
  readonly #maxAge: number;
  readonly #limit: number;
  readonly #now: () => number;

  constructor(maxAge: number, limit = KNOWN_QUEUES_LIMIT, now: () => number = monotonicNow) {
    this.#maxAge = maxAge;
    this.#limit = limit;
    this.#now = now;
  }

  /** Whether `queue` is most likely there: seen in use within `maxAge`, and not deleted by our sweep since. */
  has(queue: string): boolean {
    const seen = this.#seen.get(queue);
    if (seen === undefined) return false;
    if (this.#now() - seen <= this.#maxAge) return true;
    this.#seen.delete(queue);
    return false;
  }

  /** `queue` exists now (a znode was created in it, released from it, or its creation failed as existing). */
  saw(queue: string): void {
    this.#seen.delete(queue); // re-inserted last: the Map's order is the order of use
    this.#seen.set(queue, this.#now());
    if (this.#seen.size > this.#limit) this.#seen.delete(this.#seen.keys().next().value as string);
  }

  /** `queue` is gone (a create in it found it missing, or our sweep deleted it). */
  forget(queue: string): void {
    this.#seen.delete(queue);
  }

  get size(): number {
    return this.#seen.size;
  }
}
