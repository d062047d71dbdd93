import type { ClientDriver } from './types.js';

type Listener = (...args: never[]) => void;

/** The parts of a node-redis (v4+) client or cluster client we use. */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  options?: {
    url?: string;
    socket?: { host?: string; port?: number; path?: string };
    database?: number;
    rootNodes?: Array<{ url?: string; socket?: { host?: string; port?: number } }>;
  };
  /** where a node-redis v5+ cluster (createCluster) keeps its options: it has no `options` */
  _options?: NodeRedisLike['options'];
  sendCommand(...args: unknown[]): Promise<unknown>;
  duplicate(): NodeRedisLike;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: string, listener: Listener): unknown;
  once(event: string, listener: Listener): unknown;
  removeListener(event: string, listener: Listener): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<unknown>;
}

export function isNodeRedis(client: unknown): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.sendCommand === 'function' &&
    typeof c.isOpen === 'boolean' &&
    typeof c.duplicate === 'function'
  );
}

/** A standalone client's `options`; a v5+ cluster has only `_options` (v4's cluster had `options`). */
function optionsOf(client: NodeRedisLike): NonNullable<NodeRedisLike['options']> {
  return client.options ?? client._options ?? {};
}

export function isNodeRedisCluster(client: NodeRedisLike): boolean {
  return Array.isArray(optionsOf(client).rootNodes);
}

export function nodeRedisName(client: NodeRedisLike): string {
  const o = optionsOf(client);
  if (o.rootNodes) {
    return `cluster(${o.rootNodes.map((n) => (n.url ? address(n.url) : `${n.socket?.host ?? 'localhost'}:${n.socket?.port ?? 6379}`)).join(',')})`;
  }
  const base =
    o.socket?.path ??
    (o.socket?.host || o.socket?.port
      ? `${o.socket.host ?? 'localhost'}:${o.socket.port ?? 6379}`
      : o.url
        ? address(o.url)
        : 'localhost:6379');
  return o.database ? `${base}/${o.database}` : base;
}

function address(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || 6379}`;
  } catch {
    return url;
  }
}

/**
 * Command options for our requests: no timeout of node-redis's own. Every request already has our deadline
 * (nodeTimeout, adapters/node.ts), and node-redis 5 gives each command a 5 s one by default, made with
 * `AbortSignal.timeout` and two listeners: in a W2 profile (64 callers, one node) that was about 15 % of the
 * client's CPU and much of its garbage collection (30 %). Older node-redis ignores the option.
 */
const OWN_DEADLINE = Object.freeze({ timeout: 0 });

/** node-redis driver: standalone `createClient` or `createCluster`. The user keeps ownership of the client. */
export class NodeRedisDriver implements ClientDriver {
  readonly name: string;
  readonly isCluster: boolean;
  private subscriber: Promise<NodeRedisLike> | undefined;
  private subscriberClient: NodeRedisLike | undefined;
  private readonly handlers = new Map<string, (message: string) => void>();
  private readonly errorListeners: Array<(e: Error) => void> = [];
  private closed = false;
  /** ours on the client; close() takes it off again: a caller's client outlives many managers */
  private readonly onClientError = (e: Error): void => this.emitError(e);

  constructor(private readonly client: NodeRedisLike) {
    this.name = nodeRedisName(client);
    this.isCluster = isNodeRedisCluster(client);
    // node-redis throws an 'error' event with no listener; a lock library must not crash the process for a node outage.
    client.on('error', this.onClientError);
  }

  state(): 'ready' | 'connecting' | 'closed' {
    if (this.closed || !this.client.isOpen) return 'closed';
    return this.client.isReady ? 'ready' : 'connecting';
  }

  whenReady(callback: () => void): () => void {
    const listener = (): void => callback();
    this.client.once('ready', listener);
    return () => this.client.removeListener('ready', listener);
  }

  readonly sendRouted = (routingKey: string, args: readonly string[]): Promise<unknown> =>
    this.client.sendCommand(routingKey, false, [...args], OWN_DEADLINE);

  send(args: readonly string[]): Promise<unknown> {
    if (!this.isCluster) return this.client.sendCommand([...args], OWN_DEADLINE);
    // EVAL/EVALSHA: args[2] is numkeys, args[3] the first key, which picks the slot.
    return this.client.sendCommand(args[3], false, [...args], OWN_DEADLINE);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.handlers.set(channel, onMessage);
    const sub = await this.subscriberConnection();
    await sub.subscribe(channel, (message: string) => this.handlers.get(channel)?.(message));
  }

  async unsubscribe(channel: string): Promise<void> {
    this.handlers.delete(channel);
    const sub = this.subscriberClient;
    if (sub?.isReady) await sub.unsubscribe(channel);
  }

  onError(listener: (error: Error) => void): void {
    this.errorListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    // The client is the caller's: it keeps no listener of a closed manager (nor the manager, through it).
    this.client.removeListener('error', this.onClientError);
    const sub = this.subscriberClient;
    this.subscriber = undefined;
    this.subscriberClient = undefined;
    if (!sub) return;
    if (sub.destroy) sub.destroy();
    else await sub.disconnect?.().catch(() => undefined);
  }

  private subscriberConnection(): Promise<NodeRedisLike> {
    if (!this.subscriber) {
      const sub = this.client.duplicate();
      this.subscriberClient = sub;
      sub.on('error', (e: Error) => this.emitError(e));
      this.subscriber = sub.connect().then(() => sub);
      this.subscriber.catch(() => {
        // Try again on the next subscribe rather than keeping a dead connection.
        if (this.subscriberClient === sub) {
          this.subscriber = undefined;
          this.subscriberClient = undefined;
          sub.destroy?.();
        }
      });
    }
    return this.subscriber;
  }

  private emitError(error: Error): void {
    for (const listener of this.errorListeners) listener(error);
  }
}
