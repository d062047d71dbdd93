/** PINGs each URL once; resolves with the ones that did not answer within `timeoutMs`, and why. */
export async function unreachable(urls: readonly string[], timeoutMs = 1_000): Promise<Array<{ url: string; reason: string }>> {
  // Loaded here: the orders scenario on etcd or ZooKeeper imports this file and needs no Redis client.
  const { Redis } = await import('ioredis');
  const results = await Promise.all(
    urls.map(async (url) => {
      const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
      let lastError = '';
      client.on('error', (e: Error) => (lastError = e.message));
      try {
        await withTimeout(
          client.connect().then(() => client.ping()),
          timeoutMs,
        );
        return undefined;
      } catch (error) {
        return { url, reason: lastError || (error as Error).message };
      } finally {
        client.disconnect();
      }
    }),
  );
  return results.filter((r): r is { url: string; reason: string } => r !== undefined);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}
