import type { LocalRedisNode } from '../../testing/index.js';

/**
 * The faults the demo injects, each triggered once by progress (units sold):
 *   1/3: SIGKILL one lock node; bring it back (empty) a few seconds later
 *   1/2: freeze a worker (SIGSTOP) inside its critical section for longer than the TTL
 *   2/3: pause a second lock node (SIGSTOP) briefly
 */
export interface ChaosHooks {
  announce(text: string): void;
  /** ask a worker to stop between its read and its write; resolves with its PID when it is there */
  freezeWorker(): Promise<{ id: number; pid: number } | undefined>;
}

export class Chaos {
  nodeFaults = 0;
  freezes = 0;
  private readonly done = new Set<string>();
  private readonly pending: Array<Promise<void>> = [];

  constructor(
    private readonly nodes: readonly LocalRedisNode[] | undefined,
    private readonly ttl: number,
    private readonly random: () => number,
    private readonly hooks: ChaosHooks,
  ) {}

  /** Called on every sale with the fraction of stock sold. */
  progress(fraction: number): void {
    if (fraction >= 1 / 3) this.once('kill', () => this.killAndRestartNode());
    if (fraction >= 1 / 2) this.once('freeze', () => this.freezeWorker());
    if (fraction >= 2 / 3) this.once('pause', () => this.pauseNode());
  }

  /** Waits for faults still in progress (a node coming back, a worker resumed). */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
  }

  private once(name: string, run: () => Promise<void>): void {
    if (this.done.has(name)) return;
    this.done.add(name);
    this.pending.push(run().catch((e: unknown) => this.hooks.announce(`chaos ${name} failed: ${(e as Error).message}`)));
  }

  private pick(exclude: number[] = []): [number, LocalRedisNode] | undefined {
    if (!this.nodes) return undefined;
    const choices = this.nodes.map((n, i) => [i, n] as [number, LocalRedisNode]).filter(([i, n]) => !exclude.includes(i) && n.isRunning());
    return choices[Math.floor(this.random() * choices.length)];
  }

  private killed = -1;

  private async killAndRestartNode(): Promise<void> {
    const chosen = this.pick();
    if (!chosen) return;
    const [i, node] = chosen;
    this.killed = i;
    await node.kill('SIGKILL');
    this.nodeFaults++;
    this.hooks.announce(`lock node ${i + 1} (${node.port}) killed with SIGKILL`);
    await sleep(3_000);
    await node.restart();
    this.hooks.announce(`lock node ${i + 1} back, empty (restart quarantine keeps it out for one TTL)`);
  }

  private async freezeWorker(): Promise<void> {
    const target = await this.hooks.freezeWorker();
    if (!target) return;
    const ms = Math.round(this.ttl * 2);
    process.kill(target.pid, 'SIGSTOP');
    this.freezes++;
    this.hooks.announce(`worker ${target.id} frozen (SIGSTOP) for ${ms} ms while holding the lock, between its read and its write`);
    await sleep(ms);
    process.kill(target.pid, 'SIGCONT');
    this.hooks.announce(`worker ${target.id} resumed: its lease ran out while it slept`);
  }

  private async pauseNode(): Promise<void> {
    const chosen = this.pick([this.killed]);
    if (!chosen) return;
    const [i, node] = chosen;
    node.pause();
    this.nodeFaults++;
    this.hooks.announce(`lock node ${i + 1} (${node.port}) paused (SIGSTOP): hung, not refusing`);
    await sleep(1_000);
    node.resume();
    this.hooks.announce(`lock node ${i + 1} resumed`);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A small seeded PRNG (mulberry32), so --seed replays the same choices. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
