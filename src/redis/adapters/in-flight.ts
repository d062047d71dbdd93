/**
 * Backpressure for one node's connection (issue 25): at most `limit` requests are on the wire at once; the
 * rest wait here, in order, and their timeout does not run while they wait (it measures the node from the
 * moment a request is handed to the client, not this process's own backlog). A burst of thousands of requests
 * then reaches the node a few hundred at a time instead of all at once, each answered well within its timeout.
 *
 * While the node is judged unresponsive (a request on the wire got no answer, and the node answered nothing
 * else, for a whole timeout) nothing waits here and one request at a time goes out, as a probe: the others fail
 * at once. So a hung node's errors come within one timeout however long the backlog was, and nothing piles up
 * to run on it when it wakes; the probe's answer says it is back.
 */
export class InFlight {
  #active = 0;
  /** requests waiting for a slot, oldest first from #head (compacted as it drains) */
  #backlog: Array<Pending | undefined> = [];
  #head = 0;
  /** the node answered nothing for a whole timeout while a request of ours was on the wire */
  #unresponsive = false;

  constructor(readonly limit: number) {}

  /** Requests on the wire now. */
  get active(): number {
    return this.#active;
  }

  /** Requests waiting for a slot now. */
  get waiting(): number {
    return this.#backlog.length - this.#head;
  }

  /**
   * Calls `start` at once when a slot is free, else when one frees up. `fail` instead, at once or later, when
   * the node turns out unresponsive first. Each `start` must be matched by one `leave()`.
   */
  enter(start: () => void, fail: () => void): void {
    if (this.#active < (this.#unresponsive ? 1 : this.limit)) {
      this.#active++;
      start();
    } else if (this.#unresponsive) fail();
    else this.#backlog.push({ start, fail });
  }

  /** A request that had a slot settled (answered, failed or timed out): the next one in the backlog goes. */
  leave(): void {
    this.#active--;
    const next = this.#unresponsive ? undefined : this.#shift();
    if (next) {
      this.#active++;
      next.start();
    }
  }

  /** The node answered something: it is alive, whatever its backlog. */
  answered(): void {
    this.#unresponsive = false;
  }

  /** A request on the wire got no answer for a whole timeout, with no other answer meanwhile: the backlog fails now. */
  unresponsive(): void {
    this.#unresponsive = true;
    for (let p = this.#shift(); p; p = this.#shift()) p.fail();
  }

  #shift(): Pending | undefined {
    if (this.#head >= this.#backlog.length) return undefined;
    const p = this.#backlog[this.#head];
    this.#backlog[this.#head++] = undefined;
    if (this.#head >= this.#backlog.length) {
      this.#backlog = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#backlog.length) {
      this.#backlog = this.#backlog.slice(this.#head);
      this.#head = 0;
    }
    return p;
  }
}

interface Pending {
  readonly start: () => void;
  readonly fail: () => void;
}
