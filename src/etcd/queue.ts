// Every hold on etcd is a key in a queue: `<queue prefix><lease id>`, created in a transaction, attached to
// the holder's lease (the key goes when the lease ends), ordered by its create revision. What differs
// between a mutex, a semaphore permit and a read or write hold is only who may hold, and whose deletion a
// waiter watches (the key just before it, so one release wakes one waiter). That is all this file says.
import type { IKeyValue } from './etcd3-types.js';
import { escapeName } from '../escape-name.js';
import { blocker as blockerOf, type QueueKind } from '../queue-rules.js';

export type { QueueKind };

export interface Queue {
  /** every key of this queue starts with it: `<keyPrefix>[semaphore:|rwlock:]<escaped name>/` */
  readonly prefix: string;
  readonly kind: QueueKind;
}

export function mutexQueue(keyPrefix: string, resource: string): Queue {
  return { prefix: `${keyPrefix}${escapeName(resource)}/`, kind: { kind: 'mutex' } };
}

export function semaphoreQueue(keyPrefix: string, name: string, limit: number): Queue {
  return { prefix: `${keyPrefix}semaphore:${escapeName(name)}/`, kind: { kind: 'semaphore', limit } };
}

export function rwQueue(keyPrefix: string, name: string, mode: 'read' | 'write'): Queue {
  return { prefix: `${keyPrefix}rwlock:${escapeName(name)}/`, kind: { kind: mode } };
}

/** The value of a holder's key: its owner token, after `r ` / `w ` in a read-write lock (readers ask who writes). */
export function keyValue(queue: Queue, token: string): string {
  const { kind } = queue.kind;
  return kind === 'read' ? `r ${token}` : kind === 'write' ? `w ${token}` : token;
}

/** The owner token in a key's value. */
export function ownerOf(value: Buffer | string): string {
  const text = value.toString();
  return /^[rw] /.test(text) ? text.slice(2) : text;
}

const isWriter = (kv: IKeyValue): boolean => kv.value.toString().startsWith('w ');

/** How many of the queue's first keys (by create revision) show whether a newcomer holds at once (0: all). */
export function window(queue: Queue): number {
  const k = queue.kind;
  return k.kind === 'semaphore' ? k.limit : k.kind === 'read' ? 0 : 1;
}

/** What a waiter must see deleted before it may hold, given the keys created before it (ascending): see queue-rules.ts. */
export const blocker = (queue: Queue, before: readonly IKeyValue[]): IKeyValue | 'any' | null => blockerOf(queue.kind, before, isWriter);

/** Which keys before a waiter `blocker` needs: the last one only, or all (a reader's writers, a semaphore's count). */
export function lookBack(queue: Queue): number {
  const k = queue.kind.kind;
  return k === 'mutex' || k === 'write' ? 1 : 0;
}
