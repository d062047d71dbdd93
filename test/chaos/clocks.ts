// Clock rates for the lock nodes of a Redis schedule (rule same-clock-rate), applied with libfaketime where it
// is installed. A node whose clock runs fast expires keys early: within the manager's driftFactor (0.01) the
// validity arithmetic (ttl - elapsed - ttl x driftFactor - 2 ms) still ends every window before the key does;
// beyond it (--unsafe fast-clocks), a majority of fast nodes lets a second client in while the first is valid.
import { seededRandom } from '../../src/cli/demo/chaos.js';
import { startRedisNode, type LocalRedisNode } from '../../src/testing/index.js';
import { faketimeAvailable, faketimeCommandPrefix } from '../support/faults/index.js';

/** Inside the rule: a node's clock may run up to this much slow or fast (under the default driftFactor, 0.01). */
export const SAFE_DRIFT = 0.009;
/** --unsafe fast-clocks: a majority of the nodes runs this many times as fast as real time. */
export const FAST_RATE: readonly [number, number] = [1.5, 3];

/**
 * Each node's clock rate, drawn from its own stream of the seed (so adding clocks left every seed's steps and
 * worker choices as they were). Inside the rule every rate is within SAFE_DRIFT of 1; with `fast`, a majority
 * of the nodes (drawn) run FAST_RATE.
 */
export function drawClockRates(seed: number, nodes: number, fast: boolean): number[] {
  const random = seededRandom(seed ^ 0x2c1b3c6d);
  const rates = Array.from({ length: nodes }, () => round(1 + (random() * 2 - 1) * SAFE_DRIFT));
  if (fast) {
    const order = rates.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const i of order.slice(0, Math.floor(nodes / 2) + 1)) rates[i] = round(FAST_RATE[0] + random() * (FAST_RATE[1] - FAST_RATE[0]));
  }
  return rates;
}

const round = (x: number): number => Math.round(x * 10_000) / 10_000;

/** Whether rates can be applied here (the faketime package); without it every node runs at the real rate. */
export const clocksApplied = (): boolean => faketimeAvailable();

/** One fresh node per rate, each under libfaketime at its rate when faketime is installed; restarts keep the rate. */
export async function startNodesAt(rates: readonly number[]): Promise<LocalRedisNode[]> {
  const apply = clocksApplied();
  const started = await Promise.allSettled(
    rates.map((rate) => startRedisNode(apply && rate !== 1 ? { commandPrefix: faketimeCommandPrefix(rate) } : {})),
  );
  const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw failed.reason;
  }
  return nodes;
}
