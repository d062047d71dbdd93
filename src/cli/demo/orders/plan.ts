// What one run of the orders scenario does: which layers are on, which faults are injected, and the order
// requests with their duplicate deliveries (from the seed, so a run can be replayed).
import { CliError } from '../../output.js';
import { seededRandom } from '../chaos.js';

/** The four layers of protection, top to bottom. */
export const LAYERS = ['lock', 'state', 'unique', 'reconcile'] as const;
export type Layer = (typeof LAYERS)[number];

/**
 * The faults the scenario can inject:
 * - freeze-worker: a worker holding an order's lock is frozen (SIGSTOP) past its lease; its request is
 *   delivered again meanwhile, as a client that timed out would retry it
 * - kill-node: a lock node is SIGKILLed, and comes back empty a few seconds later
 * - kill-worker: a worker is SIGKILLed in the middle of writing an order; its request is delivered again
 */
export const FAULTS = ['freeze-worker', 'kill-node', 'kill-worker'] as const;
export type Fault = (typeof FAULTS)[number];

/** What can be broken on purpose, so the layers below have something to catch. */
export const BREAKABLE = ['lock'] as const;
export type Breakable = (typeof BREAKABLE)[number];

/** Parses a comma-separated list of names from `allowed`: bad usage (exit 2) on anything else. */
export function parseNames<T extends string>(option: string, allowed: readonly T[]): (value: string) => T[] {
  return (value) => {
    const names = value
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    const unknown = names.filter((n) => !(allowed as readonly string[]).includes(n));
    if (unknown.length > 0) {
      throw new CliError(
        `${option}: unknown ${unknown.length === 1 ? 'name' : 'names'} ${unknown.join(', ')} (choose from ${allowed.join(', ')})`,
        2,
      );
    }
    return [...new Set(names)] as T[];
  };
}

/** One delivery of an order request to the workers. */
export interface Delivery {
  readonly key: string;
  readonly sku: string;
  readonly qty: number;
  /** 0 for the first delivery of a key, 1 and 2 for the duplicates */
  readonly copy: number;
}

export const SKUS = ['sku-a', 'sku-b', 'sku-c'] as const;

/**
 * `orders` distinct requests, each with a client-chosen idempotency key; about a third are delivered more
 * than once: half of those duplicates right behind the first delivery (a client retrying at once: both are
 * in flight together) and half a little later (a message redelivered after the first was processed).
 */
export function plannedDeliveries(orders: number, seed: number): Delivery[] {
  const random = seededRandom(seed);
  const queue: Delivery[] = [];
  const later: Array<{ at: number; delivery: Delivery }> = [];
  for (let i = 0; i < orders; i++) {
    const r = random();
    const copies = r < 0.65 ? 1 : r < 0.9 ? 2 : 3;
    const order = { key: `order-${seed}-${String(i).padStart(5, '0')}`, sku: SKUS[i % SKUS.length]!, qty: 1 + Math.floor(random() * 3) };
    queue.push({ ...order, copy: 0 });
    for (let copy = 1; copy < copies; copy++) {
      if (random() < 0.5) queue.push({ ...order, copy });
      else later.push({ at: queue.length + 5 + Math.floor(random() * 30), delivery: { ...order, copy } });
    }
    const due = later.filter((l) => l.at <= queue.length);
    later.splice(0, later.length, ...later.filter((l) => !due.includes(l)));
    for (const l of due) queue.push(l.delivery);
  }
  return [...queue, ...later.map((l) => l.delivery)];
}
