// Every hold on ZooKeeper is an ephemeral sequential znode in a queue: `<root>/<name>/<kind>-<sequence>`,
// created in a transaction, owned by the holder's session (it goes when the session ends), ordered by its
// sequence number. What differs between a mutex, a semaphore permit and a read or write hold is only who may
// hold, and what a waiter watches (the znode just before it, so one release wakes one waiter): Curator's
// recipes (InterProcessMutex, InterProcessReadWriteLock; a semaphore's holders are the first `limit`).
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
 * The name our znode gets in `queue`, before ZooKeeper appends its 10-digit sequence number. It carries our
 * owner token (Curator's "protection"): a create whose answer was lost (a timeout, a dropped connection) may
 * still have happened, and only the name tells us which znode of the queue is ours, to delete it.
 */
export function nodePrefix(queue: Queue, token: string): string {
  const { kind } = queue.kind;
  return `${queue.path}/${kind === 'mutex' ? 'lock' : kind === 'semaphore' ? 'permit' : kind}-${token}-`;
}

/** A child of a queue: its name and sequence number. */
export interface Child {
  readonly name: string;
  readonly seq: number;
}

/** The queue's children in order (first = the longest waiting: the holder), from their names. */
export function ordered(names: readonly string[]): Child[] {
  return names
    .map((name) => ({ name, seq: Number(name.slice(-10)) }))
    .filter((c) => Number.isInteger(c.seq))
    .sort((a, b) => a.seq - b.seq);
}

const isWriter = (c: Child): boolean => c.name.startsWith('write-');

/** What a waiter must see go before it may hold, given the children ahead of it (in order): see queue-rules.ts. */
export const blocker = (queue: Queue, before: readonly Child[]): Child | 'any' | null => blockerOf(queue.kind, before, isWriter);
