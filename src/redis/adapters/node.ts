import { NodeError, NodeTimeoutError } from '../../errors.js';
import { Deadlines, type Deadline } from './deadlines.js';
import { InFlight, type Slotted } from './in-flight.js';
import type { ClientDriver, RedisNode, Script } from './types.js';

/**
 * Turns a client driver into a RedisNode with the guarantees the algorithm
 * relies on: a request never waits past its timeout, a command is only sent
 * on a ready connection (so nothing sits in a client's offline queue and
 * runs long after we gave up), and every error names the node.
 */
export class DriverNode implements RedisNode {
  readonly name: string;
  readonly isCluster: boolean;
  readonly canWaitForReplicas: boolean;
  onConnectionError?: (error: Error) => void;
  /** @internal the last connection error (cleared by an answer) */
  lastError: Error | undefined;
  /** @internal the connection has been ready at least once */
  everReady = false;
  /** requests waiting for the connection: one 'ready' listener on the client for all of them */
  private readonly readyWaiters = new Set<() => void>();
  private stopReadyListener: (() => void) | undefined;
  /** one timer for every request in flight (see deadlines.ts) */
  /** @internal */
  readonly deadlines = new Deadlines();
  /** requests on the main connection's wire, capped; the rest wait in the process (in-flight.ts) */
  readonly inFlight = new InFlight(MAX_IN_FLIGHT);
  /** performance.now() of the last answer on the main connection: a busy node keeps answering, a hung one does not */
  /** @internal */
  lastHeard = -Infinity;
  /** performance.now() of the last answer to a request still waited for (see bounded) */
  /** @internal */
  lastProgress = -Infinity;

  /** scripts sent to this node at least once (EVAL the first time, EVALSHA after: see run) */
  private readonly scriptsSent = new Set<Script>();

  constructor(/** @internal */ readonly driver: ClientDriver) {
    this.name = driver.name;
    this.isCluster = driver.isCluster;
    this.canWaitForReplicas = !driver.isCluster || driver.sendRouted !== undefined;
    // A client the user connected before handing it over gets no first-connect grace: a dead node fails fast.
    this.everReady = driver.state() === 'ready';
    if (!this.everReady) driver.whenReady(() => (this.everReady = true));
    driver.onError((error) => {
      this.lastError = error;
      this.onConnectionError?.(error);
    });
  }

  get unresponsive(): boolean {
    return this.inFlight.probing;
  }

  run(script: Script, keys: readonly string[], args: readonly string[], requested: number, firstConnectMs = requested): Promise<unknown> {
    const timeoutMs = this.allowFor(requested, firstConnectMs);
    // The first time this node is sent a script, its body goes with it (EVAL): a new process then pays no
    // NOSCRIPT reply and second round trip. Requests sent behind it on the connection find it cached.
    const first = !this.scriptsSent.has(script);
    if (first) this.scriptsSent.add(script);
    // Lower case: ioredis looks each command's flags up by its lower-case name, several times per request.
    const command: string[] = first ? ['eval', script.source, String(keys.length)] : ['evalsha', script.sha, String(keys.length)];
    for (const key of keys) command.push(key);
    for (const arg of args) command.push(arg);
    const request = new Request<unknown>(this, command, undefined, timeoutMs, script.label, true);
    request.script = script;
    return request.begin();
  }

  waitForReplicas(routingKey: string, replicas: number, waitMs: number, requested: number): Promise<number> {
    const timeoutMs = this.allowFor(requested, requested) + waitMs;
    const args = ['WAIT', String(replicas), String(waitMs)];
    const send = (): Promise<unknown> => {
      if (!this.isCluster) return this.driver.send(args);
      if (!this.driver.sendRouted)
        return Promise.reject(new NodeError(this.name, 'WAIT cannot be routed to a key’s master with this Cluster client'));
      return this.driver.sendRouted(routingKey, args);
    };
    return this.bounded(send, timeoutMs, 'WAIT', true).then(Number);
  }

  subscribe(channel: string, onMessage: (message: string) => void, requested: number): Promise<void> {
    const timeoutMs = this.allowFor(requested, requested);
    return this.bounded(() => this.driver.subscribe(channel, onMessage), timeoutMs, 'subscribe');
  }

  unsubscribe(channel: string): Promise<void> {
    return this.driver.unsubscribe(channel).catch(() => undefined);
  }

  close(): Promise<void> {
    return this.driver.close();
  }

  /** The time a request may take: `requested`, or `firstConnectMs` on a connection that has never been ready yet. */
  private allowFor(requested: number, firstConnectMs: number): number {
    if (this.everReady) return requested;
    if (this.driver.state() === 'ready') {
      this.everReady = true;
      return requested;
    }
    return Math.max(requested, firstConnectMs);
  }

  /** A request (see Request) for `send`: WAIT, subscribe. */
  private bounded<T>(send: () => Promise<T>, timeoutMs: number, what: string, gated = false): Promise<T> {
    return new Request<T>(this, undefined, send, timeoutMs, what, gated).begin();
  }

  /**
   * Calls `callback` once the connection is ready. Many requests may wait at once (a burst at startup):
   * they share one listener on the client, so the client never warns of a listener leak.
   */
  whenReady(callback: () => void): () => void {
    if (this.readyWaiters.size === 0) {
      this.stopReadyListener = this.driver.whenReady(() => {
        this.everReady = true;
        this.stopReadyListener = undefined;
        const waiting = [...this.readyWaiters];
        this.readyWaiters.clear();
        for (const f of waiting) f();
      });
    }
    this.readyWaiters.add(callback);
    return () => {
      this.readyWaiters.delete(callback);
      if (this.readyWaiters.size === 0) {
        this.stopReadyListener?.();
        this.stopReadyListener = undefined;
      }
    };
  }

  /** @internal */
  timeoutError(timeoutMs: number, what: string): NodeError {
    if (this.driver.state() !== 'ready' && this.lastError) {
      const message = `not connected within ${timeoutMs} ms, last error: ${this.lastError.message} (${what})`;
      return new NodeError(this.name, message, { cause: this.lastError });
    }
    return new NodeTimeoutError(this.name, timeoutMs);
  }

  /** @internal */
  wrap(error: unknown, what: string): NodeError {
    if (error instanceof NodeError) return error;
    const e = error instanceof Error ? error : new Error(String(error));
    return new NodeError(this.name, `${e.message} (${what})`, { cause: e });
  }
}

/**
 * One request to a node: it waits for a ready connection and then for the answer, both within one deadline.
 * A script request the node answers NOSCRIPT (restarted, script cache flushed) is sent once more as EVAL,
 * within the same deadline.
 *
 * `gated` (requests on the main connection): on a ready connection the request first waits for one of the
 * node's MAX_IN_FLIGHT slots (in-flight.ts), and its timeout counts from when it is handed to the client, so
 * it measures the node and not this process's backlog. When it passes, a request behind others that the
 * node keeps answering in time waits on (the node is busy, not hung), up to LIVE_NODE_PATIENCE timeouts; a
 * slow node (whose answers come after we gave up on them) is not busy in that sense. On a Cluster client other
 * shards' answers prove nothing, so the plain deadline applies. A node that answered nothing at all while a
 * request of ours was out for a whole timeout is unresponsive: in-flight.ts then sends one probe at a time.
 */
class Request<T> implements Deadline, Slotted {
  /** when the pending timer fires (Deadline), set whenever a timer starts tracking it (at most one at a time) */
  at = 0;
  /** set by DriverNode.run: the script of an EVALSHA, sent as EVAL when the node answers NOSCRIPT */
  script: Script | undefined;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  #done = false;
  /** the NOSCRIPT retry was sent */
  #retried = false;
  #stopWaiting: (() => void) | undefined;
  /** performance.now() when handed to the client through the gate (undefined: not gated, or not yet) */
  #sentAt: number | undefined;
  /** waiting for a slot of the node's connection (in-flight.ts) */
  #waitingForSlot = false;
  /** Deadline: the node's timer list's links (a timer tracks it while deadlinePending) */
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlinePending = false;
  /** its timer once fired late and it was given one more timeout (see #expireNow) */
  #lookedAgain = false;

  constructor(
    private readonly node: DriverNode,
    /** the command (run); else `send` makes the request (WAIT, subscribe) */
    private readonly command: string[] | undefined,
    private readonly send: (() => Promise<T>) | undefined,
    private readonly timeoutMs: number,
    private readonly what: string,
    /** on the main connection, through its slots (in-flight.ts) */
    private readonly gated: boolean,
  ) {}

  begin(): Promise<T> {
    const promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const node = this.node;
    const state = node.driver.state();
    if (state === 'ready' && this.gated) {
      // The common case, a free slot, in line: the gate's counter, the timer's entry and the send, no call
      // back from the gate (a fresh process runs this unoptimised, once per node per round).
      if (node.inFlight.take()) this.#send();
      else {
        this.#waitingForSlot = true;
        node.inFlight.enter(this);
      }
      return promise;
    }
    this.#track(performance.now() + this.timeoutMs);
    if (state === 'ready') this.#go();
    else if (state === 'closed') this.#fail(new NodeError(node.name, `connection is closed (${this.what})`));
    else if (node.everReady && node.lastError) {
      // It was up and is now reconnecting after an error (refused, reset): say so at once rather than
      // make every call of every lock wait nodeTimeout for a node that is known to be down.
      const cause = node.lastError;
      this.#fail(new NodeError(node.name, `not connected, reconnecting after: ${cause.message} (${this.what})`, { cause }));
    } else
      this.#stopWaiting = node.whenReady(() => {
        if (!this.#done) this.#go();
      });
    return promise;
  }

  /** Slotted: a slot of the node's connection is ours; the timeout counts from now. */
  start(): boolean {
    this.#waitingForSlot = false;
    // It gave up while it waited (its stalled timer ran out): the slot goes to the next one at once.
    if (this.#done) return false;
    this.node.deadlines.done(this);
    this.#send();
    return true;
  }

  /** Handed to the client through the gate: its timeout counts from now. */
  #send(): void {
    this.#sentAt = performance.now();
    this.#track(this.#sentAt + this.timeoutMs);
    this.#go();
  }

  /** Slotted: the node stopped answering while this request waited for a slot: from now on the wait is the node's doing. */
  stalled(): void {
    this.#track(performance.now() + this.timeoutMs);
  }

  /** Deadline: the timer ran out. */
  expire(): void {
    if (this.#waitingForSlot) {
      // Stalled in the backlog for a whole timeout: it never started (its slot, if one comes, is passed on).
      if (this.#settle()) this.#reject(this.node.timeoutError(this.timeoutMs, this.what));
      return;
    }
    // Node runs due timers before it reads the sockets: after a stall of this process (a burst of
    // requests sent in one go, a long synchronous task) the answer may already be waiting unread.
    // setImmediate runs after the sockets are read, so such an answer still wins.
    const firedAt = performance.now();
    setImmediate(() => this.#expireNow(firedAt));
  }

  /**
   * The verdict on a request whose timer fired at `firedAt`. What the node has answered is known as of the
   * socket reads that came after `firedAt`; the verdict is judged as of then, not as of now. A check phase can
   * run long before it gets here (hundreds of other requests' expiries and the work they start, in a starved
   * process), and the node's answers meanwhile wait unread: that time is this process's, not the node's.
   */
  #expireNow(firedAt: number): void {
    if (this.#done) return;
    const node = this.node;
    const sentAt = this.#sentAt;
    // Busy, not hung: since this request was sent, the node answered requests that were ahead of it
    // (answers come in order) and that we still waited for. Its timeout counts again from that answer.
    if (sentAt !== undefined && !node.isCluster && node.lastProgress > sentAt && firedAt - sentAt < LIVE_NODE_PATIENCE * this.timeoutMs) {
      this.#track(node.lastProgress + this.timeoutMs);
      return;
    }
    // The timer fired late: this process was busy at the deadline, and a request handed over during that busy
    // spell may have left its socket only at the spell's end (a corked write goes at the end of the turn). One
    // more timeout from now before the node is blamed for its silence; a hung node is still found, a timeout later.
    if (sentAt !== undefined && !this.#lookedAgain && firedAt - this.at > this.timeoutMs / 4) {
      this.#lookedAgain = true;
      this.#track(performance.now() + this.timeoutMs);
      return;
    }
    // Unresponsive first: the slot this request frees must not send the next one into a hung node.
    if (sentAt !== undefined && node.lastHeard <= sentAt) node.inFlight.unresponsive();
    if (this.#settle()) this.#reject(node.timeoutError(this.timeoutMs, this.what));
  }

  #go(): void {
    const sent = this.command ? (this.node.driver.send(this.command) as Promise<T>) : (this.send as () => Promise<T>)();
    sent.then(this.#answered, this.#failed);
  }

  readonly #answered = (value: T): void => {
    const now = performance.now();
    this.#heard(now);
    if (!this.#settle()) return;
    const node = this.node;
    // Progress: an answer to a request we still waited for (a late answer to one we gave up on is not).
    if (this.#sentAt !== undefined) node.lastProgress = now;
    node.lastError = undefined; // it answered: whatever went wrong before is over
    this.#resolve(value);
  };

  readonly #failed = (error: unknown): void => {
    if (isReplyError(error)) this.#heard();
    if (this.#done) return;
    const wrapped = this.node.wrap(error, this.what);
    // The node restarted or its script cache was flushed: EVAL sends the body and caches it again.
    const command = this.command;
    if (!this.#retried && this.script && command && wrapped.message.includes('NOSCRIPT')) {
      this.#retried = true;
      command[0] = 'eval';
      command[1] = this.script.source;
      (this.node.driver.send(command) as Promise<T>).then(this.#answered, this.#failed);
      return;
    }
    this.#fail(wrapped);
  };

  #fail(error: NodeError): void {
    if (this.#settle()) this.#reject(error);
  }

  /** An answer on the main connection: the node is alive (another connection's, the subscriber's, says nothing of it). */
  #heard(now = performance.now()): void {
    if (!this.gated) return;
    this.node.lastHeard = now;
    this.node.inFlight.answered();
  }

  /** Ends the request once: its timer, its wait for the connection, its slot. false if it had already ended. */
  #settle(): boolean {
    if (this.#done) return false;
    this.#done = true;
    this.node.deadlines.done(this);
    this.#stopWaiting?.();
    if (this.#sentAt !== undefined) this.node.inFlight.leave();
    return true;
  }

  #track(at: number): void {
    this.at = at;
    this.node.deadlines.track(this);
  }
}

/**
 * Requests one node's main connection has on the wire at once; the rest wait in the process. Enough to keep
 * a node busy (its answers stream back while more go out), few enough that the last one is answered in
 * milliseconds, far inside any sensible nodeTimeout.
 */
export const MAX_IN_FLIGHT = 256;

/**
 * How many nodeTimeouts in all a request may wait on a node that keeps answering, in time, the requests ahead
 * of it (a standalone connection answers in order): it is busy with them, not hung.
 */
export const LIVE_NODE_PATIENCE = 10;

/** An error the server sent (the node answered), as opposed to a connection that failed. */
function isReplyError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'ReplyError' || name === 'ErrorReply' || name === 'SimpleError';
}
