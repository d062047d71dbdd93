// Clock rates for the lock nodes of a Redis schedule (rule same-clock-rate), applied with libfaketime where it
// is installed. A node whose clock runs fast expires keys early: within the manager's driftFactor (0.01) the
// validity arithmetic (ttl - elapsed - ttl x driftFactor - 2 ms) still ends every window before the key does;
// beyond it (--unsafe fast-clocks), a majority of fast nodes lets a second client in while the first is valid.
import { seededRandom } from '../../src/cli/demo/chaos.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
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

/** A node meant to run at FAST_RATE whose clock measures below this did not get its rate (libfaketime did not take hold). */
const FAST_ENOUGH = 1.25;

/**
 * --unsafe fast-clocks: each node's clock rate as measured (its TIME across about 250 ms of real time), checked
 * against the rate it was started at. A run whose fast clocks did not take hold would report 0 violations for
 * the wrong reason: this throws instead, naming the node. Returns the measured rates, for the run's output.
 */
export async function checkFastClocks(nodes: readonly LocalRedisNode[], rates: readonly number[]): Promise<string> {
  const clients = nodes.map((n) => new Redis(n.url, { maxRetriesPerRequest: 1 }));
  try {
    const read = (): Promise<Array<[number, number]>> =>
      Promise.all(
        clients.map(async (c) => {
          const [sec, usec] = await c.time();
          return [Number(sec) * 1_000 + Number(usec) / 1_000, performance.now()] as [number, number];
        }),
      );
    const before = await read();
    await sleep(250);
    const after = await read();
    const measured = after.map(([node, real], i) => (node - before[i]![0]) / (real - before[i]![1]));
    const slow = measured.findIndex((m, i) => rates[i]! >= FAST_RATE[0] && m < FAST_ENOUGH);
    const shown = measured.map((m) => m.toFixed(2)).join(', ');
    if (slow >= 0)
      throw new Error(
        `node ${slow} was started at ${rates[slow]}x real time but its clock measured ${measured[slow]!.toFixed(2)}x: libfaketime did not take hold`,
      );
    return `clock rates measured: ${shown} (started at ${rates.join(', ')})`;
  } finally {
    for (const c of clients) c.disconnect();
  }
}
