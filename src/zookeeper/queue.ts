// Every hold on ZooKeeper is an ephemeral sequential znode in a queue: `<root>/<name>/<protected name><sequence>`,
// created in a transaction, owned by the holder's session (it goes when the session ends), ordered by its
// sequence number. What differs between a mutex, a semaphore permit and a read or write hold is only who may
// hold, and what a waiter watches (one znode ahead of it, so one release wakes one waiter). Names, order and
// waiting are Curator's (InterProcessMutex, InterProcessReadWriteLock), so a Java service's lock on the same
// path is the same lock; a semaphore's holders are the first `limit`.
import { escapeName } from '../escape-name.js';
import { blocker as blockerOf, type QueueKind } from '../queue-rules.js';

export type { QueueKind };

export interface Queue {
  /** the parent znode: `<root>/[semaphore:|rwlock:]<escaped name>` */
  readonly path: string;
  readonly kind: QueueKind;
}

/** The root znode for a key prefix: `fencelock:` → `/fencelock`. */
export function rootOf(keyPrefix: string): string {
  const name = keyPrefix.replace(/[:/]+$/, '');
  return `/${name === '' ? 'fencelock' : escapeName(name)}`;
}

/** A name as a znode name: escaped as for etcd, and '.'/'..' (not valid znode names) and control characters too. */
function znodeName(name: string): string {
  const escaped = [...escapeName(name)]
    .map((c) =>
      c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : c,
    )
    .join('');
  return escaped === '.' || escaped === '..' ? escaped.replace(/\./g, '%2E') : escaped;
}

export function mutexQueue(root: string, resource: string): Queue {
  return { path: `${root}/${znodeName(resource)}`, kind: { kind: 'mutex' } };
}

export function semaphoreQueue(root: string, name: string, limit: number): Queue {
  return { path: `${root}/semaphore:${znodeName(name)}`, kind: { kind: 'semaphore', limit } };
}

export function rwQueue(root: string, name: string, mode: 'read' | 'write'): Queue {
  return { path: `${root}/rwlock:${znodeName(name)}`, kind: { kind: mode } };
}

/**
 * The name our znode gets in `queue`, before ZooKeeper appends its 10-digit sequence number: Curator's, so that
 * Curator's InterProcessMutex and InterProcessReadWriteLock on the same path share the queue (docs/zookeeper.md,
 * "Sharing locks with Go and Java services"). Curator's "protected" form `_c_<uuid>-<lock name>`: a create whose
 * answer was lost (a timeout, a dropped connection) may still have happened, and only the name tells us which
 * znode of the queue is ours, to delete it. The lock names are Curator's: `lock-` (a mutex), `__READ__`,
 * `__WRIT__`; a semaphore permit, which Curator has no queue for, is `permit-`.
 *
 * A writer's name starts with `write-<uuid>-` instead of `_c_<uuid>-`: readers of fencelock 0.1 know a writer
 * only by that start (`write-<token>-<seq>`), and must keep seeing one during a rolling upgrade.
 * Curator knows a writer by `__WRIT__` anywhere in the name and never reads another client's prefix.
 */
export function nodePrefix(queue: Queue, protectedId: string): string {
  switch (queue.kind.kind) {
    case 'mutex':
      return `${queue.path}/_c_${protectedId}-lock-`;
    case 'semaphore':
      return `${queue.path}/_c_${protectedId}-permit-`;
    case 'read':
      return `${queue.path}/_c_${protectedId}-__READ__`;
    case 'write':
      return `${queue.path}/write-${protectedId}-__WRIT__`;
  }
}

/** Whether a child of a queue is ours: its name carries our protection id (a random UUID). */
export const isOurs = (name: string, protectedId: string): boolean => name.includes(protectedId);

/** A child of a queue: its name and sequence number. */
export interface Child {
  readonly name: string;
  readonly seq: number;
}

/**
 * The queue's children in order (first = the longest waiting: the holder), each by its own sequence number,
 * whatever else its name holds: Curator's names (`_c_<uuid>-lock-<seq>`, `…__READ__<seq>`, `…__WRIT__<seq>`),
 * ours, and those of fencelock 0.1 (`lock-<token>-<seq>`, `read-…`, `write-…`, `permit-…`), so that
 * managers on either side of an upgrade, and Curator, agree on one order. Curator orders by what follows the
 * last `lock-` (or `__READ__` / `__WRIT__`): the same number for every name but the old ones.
 */
export function ordered(names: readonly string[]): Child[] {
  return names
    .map((name) => ({ name, seq: Number(name.slice(-10)) }))
    .filter((c) => /^\d{10}$/.test(c.name.slice(-10)))
    .sort((a, b) => a.seq - b.seq);
}

/** A writer of a read-write lock: Curator's mark (ours has it too), or the name fencelock 0.1 gave one. */
const isWriter = (c: Child): boolean => c.name.includes('__WRIT__') || c.name.startsWith('write-');

/**
 * What a waiter must see go before it may hold, given the children ahead of it (in order). As Curator's
 * recipes: a mutex or a writer waits for the child just before it; a reader for the first writer ahead of it
 * (InterProcessReadWriteLock's read predicate), and looks again when that one goes; a semaphore permit (no
 * Curator counterpart) for any holder leaving, once `limit` are ahead.
 */
export function blocker(queue: Queue, before: readonly Child[]): Child | 'any' | null {
  if (queue.kind.kind === 'read') return before.find(isWriter) ?? null;
  return blockerOf(queue.kind, before, isWriter);
}
