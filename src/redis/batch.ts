import type { RedisNode, Script } from './adapters/index.js';
import { NodeError } from '../errors.js';
import { scripts } from './scripts/index.js';
import { atTurnEnd, type TurnEnd } from './adapters/turn-end.js';

/** The scripts batch.lua runs, by the tag it knows each by. */
const TAGS = new Map<Script, string>([
  [scripts.acquire, 'a'],
  [scripts.release, 'r'],
]);

/**
 * Most requests per call. A full batch leaves at once, so the node starts on it while the process prepares the
 * rest of its turn; and a script holds the node while it runs (16 acquires: a few hundred microseconds at most).
 */
export const MAX_BATCH = 16;

interface Pending {
  readonly tag: string;
  readonly script: Script;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly timeoutMs: number;
  readonly firstConnectMs: number;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/**
 * A standalone node whose mutex acquires and releases of one turn of the event loop go out as one script call
 * (batch.lua) instead of one call each. Many callers at once (a busy service, the design's table) then pay each
 * command's fixed cost in the client (build, write, parse: most of a client library's time per request) and in
 * the server (dispatch, script lookup) once per batch instead of once per request.
 *
 * The first request of a turn goes as its own script, at once, so a lone caller pays nothing extra; the ones
 * after it in the same turn wait for the turn's end, or leave as soon as MAX_BATCH of them wait. (The client
 * corks its socket for the turn, so the first and the batch still leave in one write.) Every request keeps its
 * own answer and its own error, and their order on the connection is kept: any other request to the node first
 * sends what is waiting.
 */
export class BatchingNode implements RedisNode, TurnEnd {
  readonly name: string;
  readonly isCluster = false;
  readonly canWaitForReplicas: boolean;
  #pending: Pending[] = [];
  /** a turn is on: its first request has left, and its end (which sends what is still waiting) is scheduled */
  #turnEnds = false;

  constructor(private readonly node: RedisNode) {
    this.name = node.name;
    this.canWaitForReplicas = node.canWaitForReplicas;
  }

  get unresponsive(): boolean {
    return this.node.unresponsive;
  }

  get onConnectionError(): ((error: Error) => void) | undefined {
    return this.node.onConnectionError;
  }

  set onConnectionError(listener: ((error: Error) => void) | undefined) {
    this.node.onConnectionError = listener;
  }

  run(script: Script, keys: readonly string[], args: readonly string[], timeoutMs: number, firstConnectMs = timeoutMs): Promise<unknown> {
    const tag = TAGS.get(script);
    if (tag === undefined) {
      this.#flush();
      return this.node.run(script, keys, args, timeoutMs, firstConnectMs);
    }
    if (!this.#turnEnds) {
      this.#turnEnds = true;
      // Before the request goes down to the driver: this turn end comes before the driver's (turn-end.ts).
      atTurnEnd(this);
      return this.node.run(script, keys, args, timeoutMs, firstConnectMs);
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ tag, script, keys, args, timeoutMs, firstConnectMs, resolve, reject });
      if (this.#pending.length >= MAX_BATCH) this.#flush();
    });
  }

  waitForReplicas(routingKey: string, replicas: number, waitMs: number, timeoutMs: number): Promise<number> {
    this.#flush();
    return this.node.waitForReplicas(routingKey, replicas, waitMs, timeoutMs);
  }

  subscribe(channel: string, onMessage: (message: string) => void, timeoutMs: number): Promise<void> {
    return this.node.subscribe(channel, onMessage, timeoutMs);
  }

  unsubscribe(channel: string): Promise<void> {
    return this.node.unsubscribe(channel);
  }

  close(): Promise<void> {
    this.#flush();
    return this.node.close();
  }

  /** @internal TurnEnd: the turn's first request has left; the ones held back since go now. */
  endTurn(): void {
    this.#turnEnds = false;
    this.#flush();
  }

  /** Sends what is waiting: one request as its own script, several as one batch.lua call. */
  #flush(): void {
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    if (batch.length === 1) {
      const only = batch[0] as Pending;
      this.node.run(only.script, only.keys, only.args, only.timeoutMs, only.firstConnectMs).then(only.resolve, only.reject);
      return;
    }
    const keys: string[] = [];
    const args = [String(batch.length)];
    let timeoutMs = 0;
    let firstConnectMs = 0;
    for (const p of batch) {
      for (const key of p.keys) keys.push(key);
      args.push(p.tag, String(p.keys.length), String(p.args.length));
      for (const arg of p.args) args.push(arg);
      timeoutMs = Math.max(timeoutMs, p.timeoutMs);
      firstConnectMs = Math.max(firstConnectMs, p.firstConnectMs);
    }
    this.node.run(scripts.batch, keys, args, timeoutMs, firstConnectMs).then(
      (reply) => this.#answer(batch, reply),
      (error: unknown) => {
        for (const p of batch) p.reject(error);
      },
    );
  }

  #answer(batch: readonly Pending[], reply: unknown): void {
    if (!Array.isArray(reply) || reply.length !== batch.length) {
      const got = Array.isArray(reply) ? `${reply.length} replies` : typeof reply;
      const error = new NodeError(this.name, `unexpected batch script reply: ${got} for ${batch.length} requests`);
      for (const p of batch) p.reject(error);
      return;
    }
    for (const [i, p] of batch.entries()) {
      const one: unknown = reply[i];
      if (Array.isArray(one)) p.reject(new NodeError(this.name, `${String(one[0])} (${p.script.label})`));
      else p.resolve(one);
    }
  }
}
