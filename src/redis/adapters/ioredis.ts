import type { ClientDriver } from './types.js';
import { atTurnEnd, type TurnEnd } from './turn-end.js';

/** The parts of an ioredis `Redis` or `Cluster` we use (structural, so ioredis stays an optional peer). */
export interface IoredisLike {
  status: string;
  isCluster?: boolean;
  options?: {
    host?: string;
    port?: number;
    path?: string;
    db?: number;
    sentinels?: Array<{ host?: string; port?: number }> | null;
    name?: string | null;
  };
  call(command: string, ...args: string[]): Promise<unknown>;
  /** the connection's socket (a standalone client) */
  stream?: Corkable;
  connect(): Promise<unknown>;
  duplicate(override?: { autoResubscribe?: boolean }): IoredisLike;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: (...args: never[]) => void): unknown;
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
}

interface Corkable {
  cork(): void;
  uncork(): void;
}

export function isIoredis(client: unknown): client is IoredisLike {
  const c = client as Partial<IoredisLike> | null;
  return (
    typeof c === 'object' && c !== null && typeof c.status === 'string' && typeof c.call === 'function' && typeof c.duplicate === 'function'
  );
}

export function ioredisName(client: IoredisLike): string {
  if (client.isCluster) {
    const startup = (client as unknown as { startupNodes?: Array<{ host?: string; port?: number } | string | number> }).startupNodes ?? [];
    const first = startup.map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}` : String(n)));
    return `cluster(${first.join(',')})`;
  }
  const o = client.options ?? {};
  // A Sentinel client: host and port are ioredis's defaults, not the server it reaches (the current primary).
  if (o.sentinels?.length) {
    const sentinels = o.sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).join(',');
    return `sentinel(${o.name ?? ''}@${sentinels})${o.db ? `/${o.db}` : ''}`;
  }
  const address = o.path ?? `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
  return o.db ? `${address}/${o.db}` : address;
}

/**
 * ioredis driver. The client may arrive later (created from a URL after a
 * dynamic import), so every use goes through `current`.
 */
export class IoredisDriver implements ClientDriver, TurnEnd {
  readonly isCluster: boolean;
  private client: IoredisLike | undefined;
  private subscriber: IoredisLike | undefined;
  private subscriberReady: Promise<IoredisLike> | undefined;
  private readonly handlers = new Map<string, (message: string) => void>();
  private readonly errorListeners: Array<(e: Error) => void> = [];
  private readonly pendingReady = new Set<() => void>();
  private closed = false;
  /** requests written since the socket was corked (0: not corked); see writeOrCork */
  private corked = 0;
  /** requests sent in this turn of the event loop (0: none yet); its end (endTurn) is scheduled at the first */
  private sentThisTurn = 0;
  /** the turn before this one sent more than one request: this turn's are corked from the first */
  private severalLastTurn = false;
  /** the socket of this turn's requests (a reconnect brings a new one: the cork comes off the one it went on) */
  private stream: Corkable | undefined;
  /** ours on the client; close() takes it off again: a caller's client outlives many managers */
  private readonly onClientError = (e: Error): void => this.emitError(e);

  constructor(
    readonly name: string,
    client: IoredisLike | Promise<IoredisLike>,
    private readonly owned: boolean,
    isCluster = false,
  ) {
    this.isCluster = isCluster;
    if (client instanceof Promise) {
      client.then(
        (c) => this.attach(c),
        (e: unknown) => this.emitError(e instanceof Error ? e : new Error(String(e))),
      );
    } else {
      this.attach(client);
    }
  }

  private attach(client: IoredisLike): void {
    if (this.closed) {
      if (this.owned) client.disconnect();
      return;
    }
    this.client = client;
    client.on('error', this.onClientError);
    for (const callback of [...this.pendingReady]) {
      this.pendingReady.delete(callback);
      this.whenReady(callback);
    }
  }

  state(): 'ready' | 'connecting' | 'closed' {
    const c = this.client;
    if (this.closed) return 'closed';
    if (!c) return 'connecting';
    if (c.status === 'ready') return 'ready';
    if (c.status === 'end') return 'closed';
    return 'connecting';
  }

  whenReady(callback: () => void): () => void {
    const c = this.client;
    if (!c) {
      this.pendingReady.add(callback);
      return () => this.pendingReady.delete(callback);
    }
    const listener = (): void => callback();
    c.once('ready', listener);
    // A lazyConnect client connects on its first command; we do not send before it is ready, so connect it.
    if (c.status === 'wait') c.connect().catch(() => undefined);
    return () => c.removeListener('ready', listener);
  }

  send(args: readonly string[]): Promise<unknown> {
    const client = this.client as IoredisLike;
    const stream = client.stream;
    if (stream && typeof stream.cork === 'function') this.writeOrCork(stream);
    // The command array as call's arguments, without a copy of its tail.
    return (client.call as (...command: string[]) => Promise<unknown>).apply(client, args as string[]);
  }

  /**
   * ioredis writes every command to the socket on its own (node-redis already batches a tick's writes).
   * Corking the socket lets the requests of many callers, or of many locks, leave in one write instead of one
   * system call each; but a write held back to the end of the turn leaves the node idle meanwhile, so every
   * few requests the cork is let go (the node starts on them while we prepare the rest).
   *
   * A turn that sends one request (a lone caller: a CLI, a cron job, W1) gains nothing from the cork and loses
   * the overlap: on several nodes, the first node would wait while the requests to the others are built. So the
   * cork goes on from a turn's first request only when the turn before sent several; otherwise the first is
   * written at once and the cork goes on at the second. A burst of callers is thus corked from its second turn,
   * and a lone caller never (docs/benchmarks.md, "A lone caller's request written at once").
   */
  private writeOrCork(stream: Corkable): void {
    if (this.sentThisTurn === 0) {
      atTurnEnd(this);
      if (this.severalLastTurn) this.cork(stream);
    } else if (this.corked === 0) this.cork(stream);
    else if (this.corked >= CORK_BATCH) {
      stream.uncork();
      stream.cork();
      this.corked = 1;
    } else this.corked++;
    this.sentThisTurn++;
  }

  private cork(stream: Corkable): void {
    this.stream = stream;
    stream.cork();
    this.corked = 1;
  }

  /** @internal TurnEnd: this turn's requests are all written or corked; the cork comes off. */
  endTurn(): void {
    this.severalLastTurn = this.sentThisTurn > 1;
    this.sentThisTurn = 0;
    if (this.corked > 0) {
      this.corked = 0;
      this.stream?.uncork();
    }
    this.stream = undefined;
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.handlers.set(channel, onMessage);
    const sub = await this.subscriberConnection();
    await sub.subscribe(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.handlers.delete(channel);
    if (this.subscriber && this.subscriber.status === 'ready') await this.subscriber.unsubscribe(channel);
  }

  onError(listener: (error: Error) => void): void {
    this.errorListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.subscriberReady = undefined;
    if (subscriber) subscriber.disconnect();
    // A caller's client keeps no listener of a closed manager (nor the manager, through it). One we made keeps it
    // until it is disconnected below.
    if (!this.owned) this.client?.removeListener('error', this.onClientError);
    if (this.owned && this.client) {
      const client = this.client;
      await Promise.race([client.quit().catch(() => undefined), new Promise((r) => setTimeout(r, 200).unref())]);
      client.disconnect();
    }
  }

  /** Pub/sub needs a connection of its own: a subscribed connection can run no other command. */
  private subscriberConnection(): Promise<IoredisLike> {
    if (!this.subscriberReady) {
      // ioredis's own resubscription after a reconnect leaves its promise unhandled: a reset during
      // it would be an unhandled rejection in the user's process. We resubscribe ourselves instead.
      // (A Cluster's duplicate() takes startup nodes first and manages its own subscriber: left as is.)
      const client = this.client as IoredisLike;
      const sub = this.isCluster ? client.duplicate() : client.duplicate({ autoResubscribe: false });
      this.subscriber = sub;
      sub.on('error', (e: Error) => this.emitError(e));
      sub.on('message', (channel: string, message: string) => this.handlers.get(channel)?.(message));
      let first = true;
      sub.on('ready', () => {
        if (first || this.isCluster) return void (first = false);
        const channels = [...this.handlers.keys()];
        if (channels.length > 0) sub.subscribe(...channels).catch((e: Error) => this.emitError(e));
      });
      this.subscriberReady = Promise.resolve(sub);
    }
    return this.subscriberReady;
  }

  private emitError(error: Error): void {
    for (const listener of this.errorListeners) listener(error);
  }
}

/** Requests held in a corked socket before it is let go (see send). */
const CORK_BATCH = 8;

/** Connection settings for connections fencelock owns: fail fast, never resend a command after we gave up on it. */
export const OWNED_IOREDIS_OPTIONS = {
  lazyConnect: false,
  enableOfflineQueue: true,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 2_000,
  retryStrategy: (times: number): number => Math.min(50 * times, 1_000),
} as const;
