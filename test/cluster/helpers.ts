// Helpers shared by the test/cluster/*.test.ts files (not a test file itself).
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import { LockManager, type LockManagerOptions } from '../../src/index.js';
import { keysFor, slotMarkerFor, type ResourceKeys } from '../../src/redis/keys.js';
import { clusterKeySlot, type LocalRedisCluster, type LocalRedisNode } from '../../src/testing/index.js';
import { eventually, type ClientKind } from '../support/harness.js';

export const PREFIX = 'fencelock:';

/** A connected Redis Cluster client of one library, closed with `close()`. */
export interface ClusterClient {
  readonly kind: ClientKind;
  readonly client: object;
  close(): void;
}

/**
 * A Cluster client as a careful user would set it up for fast failover on loopback:
 * ioredis refreshes its slot map as soon as a connection drops; node-redis only refreshes
 * after `topologyRefreshOnReconnectionAttemptStrategy` ms of reconnect attempts (default 5000).
 */
export async function clusterClient(kind: ClientKind, cluster: LocalRedisCluster): Promise<ClusterClient> {
  if (kind === 'ioredis') {
    const client = new Cluster(
      cluster.nodes.map((n) => ({ host: n.host, port: n.port })),
      {
        clusterRetryStrategy: (times) => Math.min(100 * times, 500),
        slotsRefreshTimeout: 1_000,
        redisOptions: { connectTimeout: 1_000 },
      },
    );
    client.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve);
      client.once('end', () => reject(new Error('ioredis Cluster ended before it was ready')));
    });
    return { kind, client, close: () => client.disconnect() };
  }
  const client = createCluster({
    rootNodes: cluster.urls.map((url) => ({ url })),
    defaults: { socket: { connectTimeout: 1_000, reconnectStrategy: (retries: number) => Math.min(50 * retries, 500) } },
    topologyRefreshOnReconnectionAttemptStrategy: 300,
  });
  client.on('error', () => undefined);
  await client.connect();
  return { kind, client, close: () => client.destroy() };
}

/** Managers over their own Cluster clients, all closed by `closeAll()`. */
export class Managers {
  private readonly open: Array<{ manager: LockManager; client: ClusterClient }> = [];
  constructor(private readonly cluster: () => LocalRedisCluster) {}

  async make(kind: ClientKind, options: LockManagerOptions = {}): Promise<LockManager> {
    const client = await clusterClient(kind, this.cluster());
    const manager = new LockManager([client.client], { nodeTimeout: 200, ...options });
    this.open.push({ manager, client });
    return manager;
  }

  async closeAll(): Promise<void> {
    for (const { manager, client } of this.open.splice(0)) {
      await manager.close();
      client.close();
    }
  }
}

/** A standalone connection to one cluster node, for looking behind fencelock's back; READONLY so a replica answers reads. */
export async function nodeAdmin(node: LocalRedisNode): Promise<Redis> {
  const admin = new Redis(node.port, node.host, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.call('READONLY');
  return admin;
}

let counter = 0;
/** A fresh resource name whose slot passes `accept` (bounded search). */
export function resource(label: string, accept: (slot: number) => boolean = () => true): string {
  for (let i = 0; i < 1_000_000; i++) {
    const name = `${label}-${++counter}-${randomBytes(3).toString('hex')}`;
    if (accept(slotOf(name))) return name;
  }
  throw new Error(`no resource name for ${label} found in 1000000 tries`);
}

/** The slot all of a resource's keys (lock, fence, channel, marker) hash to. */
export function slotOf(name: string): number {
  return clusterKeySlot(keysOf(name).lock);
}

export function keysOf(name: string): ResourceKeys & { slotMarker: string } {
  const keys = keysFor(PREFIX, name);
  return { ...keys, slotMarker: slotMarkerFor(PREFIX, keys.lock) };
}

/** A fresh resource served by `master` (given its slot ranges, from topology()). */
export async function resourceOn(cluster: LocalRedisCluster, master: LocalRedisNode, label: string): Promise<string> {
  const info = (await cluster.topology()).find((t) => t.node === master);
  if (!info || info.role !== 'master') throw new Error(`${master.url} is not a master`);
  return resource(label, (slot) => info.slots.some(([a, b]) => a <= slot && slot <= b));
}

/** Waits (bounded) until a manager can reach the node that serves `name` again, e.g. after a failover. */
export async function reachable(manager: LockManager, name: string, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => (await manager.inspect(name)).nodes.every((n) => n.error === null), timeoutMs, 50);
}

/**
 * Two contenders per manager, `rounds` withLock rounds each, doing a read-modify-write with a gap on a shared
 * counter: an overlap would lose an increment. Returns what a test asserts on.
 */
export async function contend(
  managers: readonly LockManager[],
  name: string,
  rounds: number,
): Promise<{ overlaps: number; shared: number; fences: bigint[] }> {
  let inside = 0;
  let overlaps = 0;
  let shared = 0;
  const fences: bigint[] = [];
  const contender = async (m: LockManager): Promise<void> => {
    for (let round = 0; round < rounds; round++) {
      await m.withLock(name, async (lock) => {
        inside++;
        if (inside > 1) overlaps++;
        fences.push(lock.fence);
        const read = shared;
        await new Promise((r) => setTimeout(r, 1));
        shared = read + 1;
        inside--;
      });
    }
  };
  await Promise.all(managers.flatMap((m) => [contender(m), contender(m)]));
  return { overlaps, shared, fences };
}
