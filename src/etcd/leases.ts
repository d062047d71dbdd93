// The leases a manager's holds hang on, lent again after a release instead of granted and revoked for every
// lock: granting one is a write etcd fsyncs on a majority, as is revoking it, so a lock of its own lease
// costs 4 writes where the floor is 2 (put the key, delete it). Go's concurrency.Session keeps one lease for
// all of a client's locks; a lease here still serves one hold at a time, so each hold keeps everything a
// lease of its own gives it: its own ttl on the server (a hold that is not extended ends there at its ttl,
// whatever the manager's other holds do), forceRelease revoking exactly that hold, and a paused or cut-off
// process losing it when the lease ends. Only the grant and the revoke are saved.
//
// Bounded: at most MAX_IDLE idle leases per lease length, and an idle lease is never renewed: it ends on the
// server at its ttl (nothing hangs on it), and is lent only while at least half its ttl is left.
import { monotonicNow } from '../clock.js';

/** Idle leases kept per lease length: enough for the holds of a busy process, at no cost when idle. */
const MAX_IDLE = 32;

/** A lease as the recipe uses it. */
export interface Lease {
  readonly id: string;
  /** its ttl on the server, s (at least the ttl asked for: the server's minimum) */
  readonly ttl: number;
}

interface Idle extends Lease {
  /** monotonic ms by which the lease still lives on the server (a lower bound) */
  readonly livesUntil: number;
}

export class LeasePool {
  /** idle leases by the length asked for (s); the most recently given back last */
  readonly #idle = new Map<number, Idle[]>();

  /**
   * An idle lease asked for `seconds`, with at least half its ttl left, or undefined (then grant one). The
   * caller renews it in the same breath as it puts its keys on it, and counts the hold's validity from then.
   */
  take(seconds: number): Lease | undefined {
    const idle = this.#idle.get(seconds);
    const now = monotonicNow();
    for (let lease = idle?.pop(); lease; lease = idle?.pop())
      if (lease.livesUntil - now >= (lease.ttl * 1000) / 2) return { id: lease.id, ttl: lease.ttl };
    return undefined;
  }

  /** A lease whose keys are all deleted, alive on the server until at least `livesUntil` (monotonic ms). */
  giveBack(seconds: number, lease: Lease, livesUntil: number): void {
    const idle = this.#idle.get(seconds) ?? [];
    if (idle.length >= MAX_IDLE) idle.shift(); // the oldest: it ends first anyway
    idle.push({ id: lease.id, ttl: lease.ttl, livesUntil });
    this.#idle.set(seconds, idle);
  }

  /** Forgets the idle leases (at close): nothing hangs on them, they end on the server at their ttl. */
  clear(): void {
    this.#idle.clear();
  }
}
