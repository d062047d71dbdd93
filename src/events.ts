import type { LockLostError } from './errors.js';

/** Payloads of the manager's events. Every one names the resources; node events name the node. */
export interface LockEvents {
  acquired: [{ resources: readonly string[]; fence: bigint; value: string; attempts: number; waited: number }];
  released: [{ resources: readonly string[]; fence: bigint; released: number; nodes: number }];
  extended: [{ resources: readonly string[]; fence: bigint; ttl: number; remaining: number }];
  lost: [{ resources: readonly string[]; fence: bigint; error: LockLostError }];
  nodeError: [{ node: string; error: Error; operation: string; resources: readonly string[] }];
  retry: [{ resources: readonly string[]; attempt: number; reason: 'notified' | 'timer'; waited: number }];
  /** A node lost its data: its grants count toward no acquire until `until` (epoch ms, this process's clock). */
  nodeQuarantined: [{ node: string; until: number }];
  /** A node that lost its data was repaired: its counters raised (`countersRaised`), trusted again, `ms` after the repair began. */
  nodeRepaired: [{ node: string; countersRaised: number; ms: number }];
}

export type LockEventName = keyof LockEvents;
export type LockEventListener<E extends LockEventName> = (...args: LockEvents[E]) => void;
