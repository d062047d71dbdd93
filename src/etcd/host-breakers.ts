// The circuit breakers of the owned etcd3 client's members, as one group: a member that failed 3 calls in a row
// is skipped for 5 s (etcd3's own default breaker, per member), but never all of them at once.
//
// Why: etcd3 counts a deadline exceeded as the member's failure. When the leader is killed, the followers
// forward writes to it until they notice (up to 2 election timeouts), and those writes time out on healthy
// members; with etcd3's breakers both followers' opened after the dead leader's, every call then failed
// without I/O for up to 5 s, and the next grant after a leader SIGKILL came after 9 s instead of 2 s
// (issue 23; bench/choosing.ts's etcd window, traced). With one breaker left closed, a call always reaches a
// member that may answer; a dead or frozen member is still skipped while another one is there.

import { monotonicNow } from '../clock.js';

/** Calls failed in a row before a member is skipped (etcd3's default). */
const FAILURES_TO_OPEN = 3;
/** How long a member is skipped (etcd3's default); then one call tries it again. */
const OPEN_MS = 5_000;

/** What etcd3 calls of a member's fault policy (`faultHandling.host`): only execute. */
export interface HostPolicy {
  execute<T>(fn: () => PromiseLike<T> | T): Promise<T>;
}

class Breaker implements HostPolicy {
  failures = 0;
  /** monotonic ms until which the member is skipped; 0 when closed */
  openUntil = 0;

  constructor(
    private readonly group: HostBreakers,
    private readonly failed: (error: unknown) => boolean,
  ) {}

  isOpen(now: number): boolean {
    return this.openUntil > now;
  }

  async execute<T>(fn: () => PromiseLike<T> | T): Promise<T> {
    // Skipped only while another member may be tried: etcd3 then goes on to the next member.
    if (this.isOpen(monotonicNow()) && this.group.anotherClosed(this))
      throw new Error('Execution prevented because the circuit breaker is open');
    try {
      const result = await fn();
      // A stream (a keep-alive, a watch) is returned before it reaches the member: no success. Its failure
      // comes later (etcd3's markFailed runs it through here). Counted as a success, it kept the dead leader's
      // breaker closed forever (success, failure, success…) while the followers' opened, and every keep-alive
      // went to the dead member: the leader-kill test's holder lost its lock 2 s after the election (traced).
      if (!isStream(result)) {
        this.failures = 0;
        this.openUntil = 0;
      }
      return result;
    } catch (error) {
      if (this.failed(error) && ++this.failures >= FAILURES_TO_OPEN) this.openUntil = monotonicNow() + OPEN_MS;
      throw error;
    }
  }
}

/** A gRPC call stream: etcd3's leaseKeepAlive and watch return one from the policy's execute. */
function isStream(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { on?: unknown }).on === 'function' &&
    typeof (value as { write?: unknown }).write === 'function'
  );
}

export class HostBreakers {
  readonly #breakers: Breaker[] = [];

  /** `failed`: whether an error counts against the member (etcd3's isRecoverableError). */
  constructor(private readonly failed: (error: unknown) => boolean) {}

  /** A member's policy, for etcd3's `faultHandling.host`. */
  forHost = (): HostPolicy => {
    const breaker = new Breaker(this, this.failed);
    this.#breakers.push(breaker);
    return breaker;
  };

  /** @internal whether a member other than `breaker`'s is not skipped now */
  anotherClosed(breaker: Breaker): boolean {
    const now = monotonicNow();
    return this.#breakers.some((b) => b !== breaker && !b.isOpen(now));
  }
}
