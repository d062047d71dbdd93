import { WaitingLine } from './waiting-line.js';

/**
 * Backpressure for one node's connection (issue 25): at most `limit` requests are on the wire at once; the
 * rest wait here, in order, and their timeout does not run while they wait (it measures the node from the
 * moment a request is handed to the client, not this process's own backlog). A burst of thousands of requests
 * then reaches the node a few hundred at a time instead of all at once, each answered well within its timeout.
 *
 * While the node is judged unresponsive (a request on the wire got no answer, and the node answered nothing
 * else, for a whole timeout) one request at a time goes out, as a probe; the others wait here and are told
 * (`stalled`) that their wait now counts against their timeout, since it is the node's doing. So a hung node's
 * errors come within a timeout however long the backlog, nothing piles up to run on it when it wakes, and a
 * node that only hiccuped serves the waiting requests as soon as it answers again.
 */
export class InFlight {
  #active = 0;
  /** requests waiting for a slot, oldest first */
  readonly #backlog = new WaitingLine<Pending>((p) => p.withdrawn);
  /** the node answered nothing for a whole timeout while a request of ours was on the wire */
  #unresponsive = false;

  constructor(readonly limit: number) {}

  /** Requests on the wire now. */
  get active(): number {
    return this.#active;
  }

  /** The node is judged unresponsive: one probe at a time goes out, and waiting requests' timeouts run. */
  get probing(): boolean {
    return this.#unresponsive;
  }

  /** Requests waiting for a slot now (some may have given up and not been dropped yet). */
  get waiting(): number {
    return this.#backlog.length;
  }

  /**
   * Starts `request` at once when a slot is free (`request.start()`), else when one frees up. `request.stalled()`
   * is called (once) if the node is or turns unresponsive while it waits. The returned function withdraws a
   * request that has not started (it gave up). Each start must be matched by one `leave()`. The request is an
   * object rather than two closures: every request of a node passes through here.
   */
  enter(request: Slotted): () => void {
    if (this.take()) {
      if (!request.start()) this.#active--;
      return noop;
    }
    const pending: Pending = { request, withdrawn: false, told: false };
    this.#backlog.push(pending);
    if (this.#unresponsive) tell(pending);
    return () => void (pending.withdrawn = true);
  }

  /**
   * A slot for a request about to be sent, when one is free (counted as taken: match it with one `leave()`);
   * false when the request must wait in line (`enter`). The common case without a call back into the request.
   */
  take(): boolean {
    if (this.#active >= this.#slots()) return false;
    this.#active++;
    return true;
  }

  /** A request that had a slot settled (answered, failed or timed out): the next one in the backlog may go. */
  leave(): void {
    this.#active--;
    if (this.#backlog.length > 0) this.#pump();
  }

  /** The node answered something: it is alive, whatever its backlog. */
  answered(): void {
    if (!this.#unresponsive) return;
    this.#unresponsive = false;
    this.#pump();
  }

  /** A request on the wire got no answer for a whole timeout, with no other answer meanwhile. */
  unresponsive(): void {
    if (this.#unresponsive) return;
    this.#unresponsive = true;
    for (const p of this.#backlog.waiting()) tell(p);
  }

  #slots(): number {
    return this.#unresponsive ? 1 : this.limit;
  }

  #pump(): void {
    while (this.#active < this.#slots()) {
      const next = this.#backlog.shift();
      if (!next) return;
      this.#active++;
      if (!next.request.start()) this.#active--;
    }
  }
}

/** A request waiting for a slot of the node's connection. */
export interface Slotted {
  /**
   * It has a slot: send it now. False when it gave up while it waited (its timeout ran out): the slot stays
   * free for the next one. A boolean rather than a call back into leave(): thousands of requests that gave
   * up in a backlog must not nest a call each on the stack as the gate passes over them.
   */
  start(): boolean;
  /** the node is unresponsive while it waits: its wait counts against its timeout from now on */
  stalled(): void;
}

interface Pending {
  readonly request: Slotted;
  withdrawn: boolean;
  told: boolean;
}

function tell(p: Pending): void {
  if (p.told) return;
  p.told = true;
  p.request.stalled();
}

const noop = (): void => undefined;
