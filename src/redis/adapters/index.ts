import { InvalidArgumentError } from '../../errors.js';
import { show } from '../../options.js';
import { IoredisDriver, ioredisName, isIoredis, OWNED_IOREDIS_OPTIONS, type IoredisLike } from './ioredis.js';
import { DriverNode } from './node.js';
import { isNodeRedis, NodeRedisDriver, nodeRedisName } from './node-redis.js';
import { SAME_SERVER_RULE, serverKey } from './same-server.js';
import type { RedisNode } from './types.js';

export type { RedisNode } from './types.js';
export { Script } from './types.js';

/**
 * Validates the whole list before anything connects, then wraps each client.
 * Throws InvalidArgumentError for an empty list, an unknown object, a bad URL,
 * or the same client (or the same server: same-server.ts says what is compared) twice: two quorum
 * members on one server would make one failure count twice.
 */
export function toNodes(clients: unknown): RedisNode[] {
  if (!Array.isArray(clients) || clients.length === 0) {
    const got = Array.isArray(clients) ? 'an empty array' : show(clients);
    throw new InvalidArgumentError(`clients must be a non-empty array of Redis clients or redis:// URLs, got ${got}`);
  }
  const seenObjects = new Map<unknown, number>();
  const seenServers = new Map<string, { index: number; name: string }>();
  const plans = clients.map((client: unknown, i) => {
    const twice = seenObjects.get(client);
    if (twice !== undefined) {
      throw new InvalidArgumentError(`clients[${i}] is the same ${typeof client === 'string' ? 'URL' : 'client'} as clients[${twice}]`);
    }
    seenObjects.set(client, i);
    const plan = planFor(client, i);
    const earlier = seenServers.get(serverKey(plan.name));
    if (earlier) {
      throw new InvalidArgumentError(
        `clients[${i}] (${plan.name}) is the same server as clients[${earlier.index}] (${earlier.name}): each node must be an independent server; ${SAME_SERVER_RULE}`,
      );
    }
    seenServers.set(serverKey(plan.name), { index: i, name: plan.name });
    return plan;
  });
  return plans.map((plan) => plan.create());
}

interface Plan {
  readonly name: string;
  create(): RedisNode;
}

function planFor(client: unknown, i: number): Plan {
  if (typeof client === 'string') return urlPlan(client, i);
  if (isIoredis(client)) {
    const name = ioredisName(client);
    return { name, create: () => new DriverNode(new IoredisDriver(name, client, false, client.isCluster === true)) };
  }
  if (isNodeRedis(client)) {
    return { name: nodeRedisName(client), create: () => new DriverNode(new NodeRedisDriver(client)) };
  }
  throw new InvalidArgumentError(`clients[${i}] is not an ioredis or node-redis client, nor a redis:// URL: got ${show(client)}`);
}

/** A URL becomes an ioredis connection that the manager owns and closes. */
function urlPlan(url: string, i: number): Plan {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(`clients[${i}] is not a valid URL: ${show(url)}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new InvalidArgumentError(`clients[${i}] must be a redis:// or rediss:// URL, got ${show(url)}`);
  }
  const db = parsed.pathname.replace(/^\//, '');
  const name = `${parsed.hostname || 'localhost'}:${parsed.port || 6379}${db && db !== '0' ? `/${db}` : ''}`;
  return { name, create: () => new DriverNode(new IoredisDriver(name, connectUrl(url), true)) };
}

async function connectUrl(url: string): Promise<IoredisLike> {
  let mod: { default?: unknown; Redis?: unknown };
  try {
    mod = (await import('ioredis')) as typeof mod;
  } catch (error) {
    throw new Error(`redis:// URLs need the ioredis package: npm install ioredis (${(error as Error).message})`);
  }
  const Redis = (mod.Redis ?? mod.default) as new (url: string, options: object) => IoredisLike;
  return new Redis(url, OWNED_IOREDIS_OPTIONS);
}
