import { createHash } from 'node:crypto';

/** A Lua script with its SHA1 computed once, so calls can go by EVALSHA. */
export class Script {
  readonly sha: string;
  /** how errors name it: `<name> script` */
  readonly label: string;
  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
    this.label = `${name} script`;
  }
}

/**
 * What the algorithm needs from one Redis node, whatever the client library.
 * Every method rejects with a NodeError (or NodeTimeoutError) that names the
 * node; none waits longer than the timeout it is given.
 */
export interface RedisNode {
  /** Address used in errors and events, e.g. `127.0.0.1:7001` or `cluster(10.0.0.1:7000)`. */
  readonly name: string;
  /** A Cluster client: keys of one call must share a slot. */
  readonly isCluster: boolean;
  /** WAIT can reach the master that holds our keys (not through an ioredis Cluster client). */
  readonly canWaitForReplicas: boolean;
  /**
   * EVALSHA, falling back to EVAL when the node answers NOSCRIPT. A connection
   * that has never been ready may take `firstConnectMs` (default: timeoutMs)
   * for its first handshake: a manager built from URLs a moment ago is not a
   * sign of dead nodes.
   */
  run(script: Script, keys: readonly string[], args: readonly string[], timeoutMs: number, firstConnectMs?: number): Promise<unknown>;
  /**
   * `WAIT replicas waitMs` on the connection the scripts run on (for a Cluster client: the connection to
   * the master that serves `routingKey`). Resolves with how many replicas acknowledged our writes.
   */
  waitForReplicas(routingKey: string, replicas: number, waitMs: number, timeoutMs: number): Promise<number>;
  /** Subscribe on a separate connection that this node owns; `onMessage` gets each message's payload. */
  subscribe(channel: string, onMessage: (message: string) => void, timeoutMs: number): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  /** Close what this adapter opened (the subscriber; the main connection only if it was made from a URL). */
  close(): Promise<void>;
  /**
   * A request on the wire got no answer, and the node answered nothing else, for a whole timeout (hung, or
   * unreachable without the connection closing): requests to it fail within their timeout until it answers again.
   */
  readonly unresponsive: boolean;
  /** Called with connection-level errors (already recorded), so the manager can report them as events. */
  onConnectionError?: (error: Error) => void;
}

/** The raw operations one client library provides; the shared wrapper adds timeouts, NOSCRIPT fallback and error naming. */
export interface ClientDriver {
  readonly name: string;
  readonly isCluster: boolean;
  /** 'ready': send now; 'connecting': wait for `whenReady`; 'closed': fail now. */
  state(): 'ready' | 'connecting' | 'closed';
  /** Resolves when the connection is ready; the returned function stops listening. */
  whenReady(callback: () => void): () => void;
  /** Sends a command as an array of arguments, e.g. ['evalsha', sha, '1', key, ...]. */
  send(args: readonly string[]): Promise<unknown>;
  /** Sends a keyless command to the node that serves `routingKey` (a Cluster); undefined: not possible with this client. */
  readonly sendRouted?: (routingKey: string, args: readonly string[]) => Promise<unknown>;
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  /** Connection errors, for diagnostics: the last one goes into timeout messages. */
  onError(listener: (error: Error) => void): void;
  close(): Promise<void>;
}
