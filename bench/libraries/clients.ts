// Connections for the adapters: one client per node, default client options, connected before measuring.
import { Redis } from 'ioredis';
import { createClient } from 'redis';

export async function connectIoredis(urls: readonly string[]): Promise<Redis[]> {
  const clients = urls.map((url) => new Redis(url, { lazyConnect: true }));
  await Promise.all(clients.map((c) => c.connect()));
  return clients;
}

export async function closeIoredis(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}

export async function connectNodeRedis(urls: readonly string[]) {
  const clients = urls.map((url) => createClient({ url }));
  for (const c of clients) c.on('error', () => undefined); // a connection error fails the cell through its commands, not a crash
  await Promise.all(clients.map((c) => c.connect()));
  return clients;
}

export async function closeNodeRedis(clients: ReadonlyArray<{ close(): Promise<unknown>; destroy(): void }>): Promise<void> {
  await Promise.all(clients.map((c) => c.close().catch(() => c.destroy())));
}
