/** Messages between the orders scenario's parent process and its workers (over the IPC channel of fork). */
import type { Delivery, Layer } from './plan.js';
import type { Outcome } from './orders.js';
import type { Repairs } from './reconcile.js';

export interface OrdersWorkerConfig {
  readonly id: number;
  readonly lockUrls: readonly string[];
  readonly databaseUrl: string;
  /** the embedded server: statements that stand alone run in a transaction each (database.ts) */
  readonly embeddedDatabase: boolean;
  readonly schema: string;
  readonly layers: readonly Layer[];
  /** the order lock's lease is far shorter than the work, and is not extended: holders overlap */
  readonly brokenLock: boolean;
  readonly ttl: number;
  /** ms of work (a payment call, say) between the state check and the write */
  readonly workMs: number;
  /** ms between reconciliation ticks (0: this worker runs none) */
  readonly reconcileEvery: number;
  readonly graceMs: number;
}

export type OrdersParentMessage =
  | { readonly type: 'start'; readonly config: OrdersWorkerConfig }
  | { readonly type: 'deliver'; readonly delivery: Delivery }
  /** stop inside the next critical section, after the state check, so the parent can freeze this process there */
  | { readonly type: 'freeze-next' }
  /** stop in the middle of the next write, so the parent can kill this process there */
  | { readonly type: 'kill-next' }
  /** not this write: its order is the one a frozen worker holds, and the fence must be what turns that worker away */
  | { readonly type: 'spare' }
  | { readonly type: 'stop' };

export type OrdersWorkerMessage =
  | { readonly type: 'ready'; readonly worker: number }
  | {
      readonly type: 'result';
      readonly worker: number;
      readonly delivery: Delivery;
      readonly outcome: Outcome;
      /** the order's lock was held by another delivery of the same key when this one asked */
      readonly heldBack: boolean;
      /** the lease ran out before the work was done (withLock rejected with LockLostError) */
      readonly leaseLost: boolean;
    }
  /** the delivery could not be handled (no quorum while nodes were down, say): deliver it again */
  | { readonly type: 'retry'; readonly worker: number; readonly delivery: Delivery; readonly message: string }
  | { readonly type: 'freeze-me'; readonly worker: number; readonly delivery: Delivery }
  | { readonly type: 'kill-me'; readonly worker: number; readonly delivery: Delivery }
  | { readonly type: 'reconciled'; readonly worker: number; readonly repairs: Repairs }
  | { readonly type: 'reconcile-stats'; readonly worker: number; readonly ran: number; readonly skipped: number; readonly failed: number };
