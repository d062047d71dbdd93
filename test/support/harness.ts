// Shared test plumbing: real redis-server nodes and both client libraries.
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { LockManager, LockTimeoutError, QuorumError, type LockManagerOptions } from '../../src/index.js';
import { startRedisNodes, type LocalRedisNodes, type StartRedisOptions } from '../../src/testing/index.js';

export type ClientKind = 'ioredis' | 'node-redis';
export const CLIENT_KINDS: readonly ClientKind[] = ['ioredis', 'node-redis'];

/** Something with a cleanup that the test's `after` runs. */
export interface Cleanup {
  (): Promise<void> | void;
}

export interface Setup {
  readonly nodes: LocalRedisNodes;
  /** one admin ioredis connection per node, for poking at keys behind fencelock's back */
  readonly admin: Redis[];
  /** makes a manager over user-owned clients of `kind`; closed (with its clients) by `close()` */
  manager(kind: ClientKind, options?: LockManagerOptions): Promise<LockManager>;
  close(): Promise<void>;
}

/** Starts `count` local nodes; `close()` stops every manager, client and node it made. */
export async function setup(count: number, opts?: StartRedisOptions): Promise<Setup> {
  const nodes = await startRedisNodes(count, opts);
  const cleanups: Cleanup[] = [];
  const admin = nodes.urls.map((url) => new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 }));
  for (const a of admin) a.on('error', () => undefined);
  return {
    nodes,
    admin,
    async manager(kind, options) {
      const clients = await makeClients(kind, nodes.urls);
      const manager = new LockManager(clients.list, options);
      cleanups.push(async () => {
        await manager.close();
        await clients.close();
      });
      return manager;
    },
    async close() {
      for (const c of cleanups.reverse()) await c();
      for (const a of admin) a.disconnect();
      await nodes.stop();
    },
  };
}

export interface Clients {
  readonly list: object[];
  close(): Promise<void>;
}

/** User-owned clients of one library, connected, with error listeners (as a careful user would attach). */
export async function makeClients(kind: ClientKind, urls: readonly string[]): Promise<Clients> {
  if (kind === 'ioredis') {
    const list = urls.map((url) => {
      const c = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(n * 20, 200) });
      c.on('error', () => undefined);
      return c;
    });
    return { list, close: async () => list.forEach((c) => c.disconnect()) };
  }
  const list = await Promise.all(
    urls.map((url) => {
      const c = createClient({ url, socket: { reconnectStrategy: (n: number) => Math.min(n * 20, 200), connectTimeout: 1000 } });
      c.on('error', () => undefined);
      return c.connect();
    }),
  );
  return { list, close: async () => list.forEach((c) => (c.isOpen ? c.destroy() : undefined)) };
}

/** Polls `check` every `every` ms until it returns true or `timeoutMs` passes; throws on timeout. Bounded. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000, every = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves with `signal`'s reason once it aborts; rejects if it does not within `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason);
    const timer = setTimeout(() => reject(new Error(`signal did not abort within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
}

/**
 * ms until `acquire` of `resource` succeeds, trying again after each QuorumError or LockTimeoutError (a store
 * in the middle of a failover), bounded by `limit`: the unavailability a fault costs.
 */
export async function timeToGrant(locks: LockManager, resource: string, limit: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limit) {
    try {
      const lock = await locks.acquire(resource, { timeout: 1_000 });
      await lock.release();
      return performance.now() - started;
    } catch (error) {
      if (!(error instanceof QuorumError || error instanceof LockTimeoutError)) throw error;
    }
  }
  throw new Error(`no grant within ${limit} ms`);
}
