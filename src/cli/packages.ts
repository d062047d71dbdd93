// The client libraries a CLI command needs, checked before it starts anything: they are optional peer
// dependencies, so `npx fencelock --help` and the commands that do not need one must run without it, and one
// that does must say so at once (bad usage, exit 2), not hang or fail later as a lock store being down.
import { loadOptional, type OptionalPackage } from '../optional-package.js';
import { EXIT } from './exit-codes.js';
import { CliError } from './output.js';

/** The packages the demo loads: the Redis client (its storage node, its Redis lock nodes) and its lock store's. */
export function demoPackages(scenario: 'stock' | 'orders', backend: 'redis' | 'etcd' | 'zookeeper'): OptionalPackage[] {
  const store: OptionalPackage = backend === 'etcd' ? 'etcd3' : backend === 'zookeeper' ? 'node-zookeeper-client' : 'ioredis';
  // The stock scenario keeps its stock on a Redis node whatever the lock store; the orders scenario keeps its in PostgreSQL.
  return scenario === 'stock' && store !== 'ioredis' ? ['ioredis', store] : [store];
}

/** Resolves when every package loads; else CliError (exit 2) naming the missing ones and `what` needs them. */
export async function requirePackages(names: readonly OptionalPackage[], what: string): Promise<void> {
  const missing: OptionalPackage[] = [];
  for (const name of names) await loadOptional(name, what).catch(() => missing.push(name));
  if (missing.length === 0) return;
  const list = missing.length === 1 ? `the ${missing[0]} package` : `the packages ${missing.join(' and ')}`;
  throw new CliError(`${what} needs ${list}, which could not be loaded: npm install ${missing.join(' ')}`, EXIT.USAGE);
}
