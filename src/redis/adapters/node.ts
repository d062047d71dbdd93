import { NodeError, NodeTimeoutError } from '../../errors.js';
import { Deadlines, type Deadline } from './deadlines.js';
import { InFlight } from './in-flight.js';
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
  private lastError: Error | undefined;
  private everReady = false;
  /** requests waiting for the connection: one 'ready' listener on the client for all of them */
  private readonly readyWaiters = new Set<() => void>();
  private stopReadyListener: (() => void) | undefined;
  /** one timer for every request in flight (see deadlines.ts) */
  private readonly deadlines = new Deadlines();
  /** requests on the main connection's wire, capped; the rest wait in the process (in-flight.ts) */
  readonly inFlight = new InFlight(MAX_IN_FLIGHT);
  /** performance.now() of the last answer on the main connection: a busy node keeps answering, a hung one does not */
  private lastHeard = -Infinity;
  /** performance.now() of the last answer to a request still waited for (see bounded) */
  private lastProgress = -Infinity;

  constructor(private readonly driver: ClientDriver) {
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
    const command: string[] = ['EVALSHA', script.sha, String(keys.length)];
    for (const key of keys) command.push(key);
    for (const arg of args) command.push(arg);
    // The node restarted or its script cache was flushed: EVAL sends the body and caches it again.
    const retry = (error: NodeError): Promise<unknown> | undefined => {
      if (!error.message.includes('NOSCRIPT')) return undefined;
      command[0] = 'EVAL';
      command[1] = script.source;
      return this.driver.send(command);
    };
    return this.bounded(() => this.driver.send(command), performance.now() + timeoutMs, timeoutMs, script.label, retry, true);
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
    return this.bounded(send, performance.now() + timeoutMs, timeoutMs, 'WAIT', undefined, true).then(Number);
  }

  subscribe(channel: string, onMessage: (message: string) => void, requested: number): Promise<void> {
    const timeoutMs = this.allowFor(requested, requested);
    return this.bounded(() => this.driver.subscribe(channel, onMessage), performance.now() + timeoutMs, timeoutMs, 'subscribe');
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

  /**
   * Waits for a ready connection and then for the answer, both within one deadline. `retry`, given the
   * error of the first send, may send once more within the same deadline (NOSCRIPT: EVAL instead).
   *
   * `gated` (requests on the main connection): on a ready connection the request first waits for one of the
   * node's MAX_IN_FLIGHT slots (in-flight.ts), and its timeout counts from when it is handed to the client, so
   * it measures the node and not this process's backlog. When it passes, a request behind others that the
   * node keeps answering in time waits on (the node is busy, not hung), up to LIVE_NODE_PATIENCE timeouts; a
   * slow node (whose answers come after we gave up on them) is not busy in that sense. On a Cluster client other
   * shards' answers prove nothing, so the plain deadline applies. A node that answered nothing at all while a
   * request of ours was out for a whole timeout is unresponsive: in-flight.ts then sends one probe at a time.
   */
  private bounded<T>(
    send: () => Promise<T>,
    deadline: number,
    timeoutMs: number,
    what: string,
    retry?: (error: NodeError) => Promise<T> | undefined,
    gated = false,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let done = false;
      let stopWaiting: (() => void) | undefined;
      let timer: Deadline | undefined;
      /** performance.now() when handed to the client through the gate (undefined: not gated, or not yet) */
      let sentAt: number | undefined;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        if (timer) this.deadlines.done(timer);
        stopWaiting?.();
        if (sentAt !== undefined) this.inFlight.leave();
        return true;
      };
      const heard = (): void => {
        if (!gated) return; // another connection (the subscriber's) says nothing of this one
        this.lastHeard = performance.now();
        this.inFlight.answered();
      };
      const answered = (value: T): void => {
        heard();
        if (!finish()) return;
        // Progress: an answer to a request we still waited for (a late answer to one we gave up on is not).
        if (sentAt !== undefined) this.lastProgress = performance.now();
        this.lastError = undefined; // it answered: whatever went wrong before is over
        resolve(value);
      };
      const failed = (error: unknown): void => {
        if (isReplyError(error)) heard();
        if (done) return;
        const wrapped = this.wrap(error, what);
        const again = retry?.(wrapped);
        retry = undefined;
        if (again) again.then(answered, failed);
        else if (finish()) reject(wrapped);
      };
      const go = (): void => void send().then(answered, failed);
      // Node runs due timers before it reads the sockets: after a stall of this process (a burst of
      // requests sent in one go, a long synchronous task) the answer may already be waiting unread.
      // setImmediate runs after the sockets are read, so such an answer still wins.
      const expire = (): void => {
        setImmediate(() => {
          if (done) return;
          // Busy, not hung: since this request was sent, the node answered requests that were ahead of it
          // (answers come in order) and that we still waited for. Its timeout counts again from that answer.
          const now = performance.now();
          if (sentAt !== undefined && !this.isCluster && this.lastProgress > sentAt && now - sentAt < LIVE_NODE_PATIENCE * timeoutMs) {
            timer = this.deadlines.add(this.lastProgress + timeoutMs, expire);
            return;
          }
          // Unresponsive first: the slot this request frees must not send the next one into a hung node.
          if (sentAt !== undefined && this.lastHeard <= sentAt) this.inFlight.unresponsive();
          if (finish()) reject(this.timeoutError(timeoutMs, what));
        });
      };
      const state = this.driver.state();
      if (state === 'ready' && gated) {
        const withdraw = this.inFlight.enter(
          () => {
            if (timer) this.deadlines.done(timer);
            sentAt = performance.now();
            timer = this.deadlines.add(sentAt + timeoutMs, expire);
            go();
          },
          // The node stopped answering while this request waited for a slot: from now on the wait is the node's doing.
          () => {
            timer = this.deadlines.add(performance.now() + timeoutMs, () => {
              withdraw();
              if (finish()) reject(this.timeoutError(timeoutMs, what));
            });
          },
        );
        return;
      }
      timer = this.deadlines.add(deadline, expire);
      if (state === 'ready') go();
      else if (state === 'closed') {
        if (finish()) reject(new NodeError(this.name, `connection is closed (${what})`));
      } else if (this.everReady && this.lastError) {
        // It was up and is now reconnecting after an error (refused, reset): say so at once rather than
        // make every call of every lock wait nodeTimeout for a node that is known to be down.
        const message = `not connected, reconnecting after: ${this.lastError.message} (${what})`;
        const cause = this.lastError;
        if (finish()) reject(new NodeError(this.name, message, { cause }));
      } else
        stopWaiting = this.whenReady(() => {
          if (!done) go();
        });
    });
  }

  /**
   * Calls `callback` once the connection is ready. Many requests may wait at once (a burst at startup):
   * they share one listener on the client, so the client never warns of a listener leak.
   */
  private whenReady(callback: () => void): () => void {
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

  private timeoutError(timeoutMs: number, what: string): NodeError {
    if (this.driver.state() !== 'ready' && this.lastError) {
      const message = `not connected within ${timeoutMs} ms, last error: ${this.lastError.message} (${what})`;
      return new NodeError(this.name, message, { cause: this.lastError });
    }
    return new NodeTimeoutError(this.name, timeoutMs);
  }

  private wrap(error: unknown, what: string): NodeError {
    if (error instanceof NodeError) return error;
    const e = error instanceof Error ? error : new Error(String(error));
    return new NodeError(this.name, `${e.message} (${what})`, { cause: e });
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
