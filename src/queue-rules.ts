// Who may hold, in a queue of holds ordered by arrival (etcd: create revision; ZooKeeper: sequence number),
// the same for every consensus backend: a mutex or a writer when first; a reader when no writer is ahead; a
// semaphore permit among the first `limit`. And what a waiter watches: the one just before it in its way, so
// one release wakes one waiter (a semaphore: any holder leaving).

export type QueueKind =
  | { readonly kind: 'mutex' }
  | { readonly kind: 'semaphore'; readonly limit: number }
  | { readonly kind: 'read' }
  | { readonly kind: 'write' };

/**
 * What a waiter must see go before it may hold, given the holds ahead of it (in order): null when it holds
 * now; a hold (the last one in its way); or 'any' for a semaphore, where any holder leaving frees a permit.
 */
export function blocker<T>(kind: QueueKind, before: readonly T[], isWriter: (hold: T) => boolean): T | 'any' | null {
  switch (kind.kind) {
    case 'mutex':
    case 'write':
      return before.at(-1) ?? null;
    case 'read':
      for (let i = before.length - 1; i >= 0; i--) if (isWriter(before[i] as T)) return before[i] as T;
      return null;
    case 'semaphore':
      return before.length >= kind.limit ? 'any' : null;
  }
}
