/** A lock node (a local redis-server) or an etcd member, as the chaos handles it. */
export interface ChaosNode {
  isRunning(): boolean;
  kill(signal?: 'SIGKILL'): Promise<void>;
  restart(): Promise<void>;
  pause(): void;
  resume(): void;
}

/** How the lock store is hit: the nodes, which one to kill (etcd: the leader), what its restart means. */
export interface ChaosTargets {
  readonly nodes: readonly ChaosNode[];
  readonly label: (i: number) => string;
  /** the index of the node to kill; default: a random one */
  readonly victim?: () => Promise<number>;
  /** said when the killed node is back */
  readonly restarted: string;
}

/**
 * The faults the demo injects, each triggered once by progress (units sold):
 *   1/3: SIGKILL one lock node (etcd: the leader); bring it back a few seconds later
 *   1/2: freeze a worker (SIGSTOP) inside its critical section for longer than the TTL
 *   2/3: pause a second lock node (SIGSTOP) briefly
 */
export interface ChaosHooks {
  announce(text: string): void;
  /**
   * ask a worker to stop between its read and its write; resolves with its PID when it is there, and
   * optionally with `thaw`: what must have happened before it may wake (a real pause knows no such thing, but
   * the demo's point is to show the fence turning the late write away, so the newer holder must have written
   * first, however slow a loaded machine is; bounded by FREEZE_MAX_MS all the same)
   */
  freezeWorker(): Promise<{ id: number; pid: number; thaw?: Promise<void> } | undefined>;
}

/** The demo's faults: SIGKILL a lock node (then restart it), freeze a worker past its lease, pause a node. */
export type ChaosFault = 'kill' | 'freeze' | 'pause';

export class Chaos {
  nodeFaults = 0;
  freezes = 0;
  private readonly done = new Set<string>();
  private readonly pending: Array<Promise<void>> = [];

  constructor(
    private readonly targets: ChaosTargets | undefined,
    private readonly ttl: number,
    private readonly random: () => number,
    private readonly hooks: ChaosHooks,
    /** which of the faults to inject (default: all three) */
    private readonly faults: ReadonlySet<ChaosFault> = new Set(['kill', 'freeze', 'pause']),
  ) {}

  /** Called on every step of progress (a sale, an order) with the fraction done. */
  progress(fraction: number): void {
    if (fraction >= 1 / 3) this.once('kill', () => this.killAndRestartNode());
    if (fraction >= 1 / 2) this.once('freeze', () => this.freezeWorker());
    if (fraction >= 2 / 3) this.once('pause', () => this.pauseNode());
  }

  /** Waits for faults still in progress (a node coming back, a worker resumed). */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
  }

  private once(name: ChaosFault, run: () => Promise<void>): void {
    if (this.done.has(name) || !this.faults.has(name)) return;
    this.done.add(name);
    this.pending.push(run().catch((e: unknown) => this.hooks.announce(`chaos ${name} failed: ${(e as Error).message}`)));
  }

  private pick(exclude: number[] = []): [number, ChaosNode] | undefined {
    if (!this.targets) return undefined;
    const choices = this.targets.nodes
      .map((n, i) => [i, n] as [number, ChaosNode])
      .filter(([i, n]) => !exclude.includes(i) && n.isRunning());
    return choices[Math.floor(this.random() * choices.length)];
  }

  private killed = -1;

  private async killAndRestartNode(): Promise<void> {
    const targets = this.targets;
    if (!targets) return;
    const victim = targets.victim ? await targets.victim() : undefined;
    const chosen = victim === undefined ? this.pick() : ([victim, targets.nodes[victim]] as [number, ChaosNode]);
    if (!chosen) return;
    const [i, node] = chosen;
    this.killed = i;
    await node.kill('SIGKILL');
    this.nodeFaults++;
    this.hooks.announce(`${targets.label(i)} killed with SIGKILL`);
    await sleep(3_000);
    await node.restart();
    this.hooks.announce(`${targets.label(i)} back, ${targets.restarted}`);
  }

  private async freezeWorker(): Promise<void> {
    const target = await this.hooks.freezeWorker();
    if (!target) return;
    const ms = Math.round(this.ttl * 2);
    process.kill(target.pid, 'SIGSTOP');
    this.freezes++;
    const frozenAt = performance.now();
    const until = target.thaw ? `${ms} ms, and until its order was placed by another worker` : `${ms} ms`;
    this.hooks.announce(`worker ${target.id} frozen (SIGSTOP) for ${until}, while holding the lock, between its read and its write`);
    await sleep(ms);
    if (target.thaw) await within(target.thaw, FREEZE_MAX_MS - ms);
    process.kill(target.pid, 'SIGCONT');
    const slept = Math.round(performance.now() - frozenAt);
    this.hooks.announce(`worker ${target.id} resumed after ${slept} ms: its lease ran out while it slept`);
  }

  private async pauseNode(): Promise<void> {
    const chosen = this.pick([this.killed]);
    if (!chosen) return;
    const [i, node] = chosen;
    node.pause();
    this.nodeFaults++;
    const label = this.targets?.label(i) ?? `node ${i + 1}`;
    this.hooks.announce(`${label} paused (SIGSTOP): hung, not refusing`);
    await sleep(1_000);
    node.resume();
    this.hooks.announce(`${label} resumed`);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits for `event`, or `ms` at the most (no timer left behind either way). */
async function within(event: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([event, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, ms))))]);
  clearTimeout(timer);
}

/** The longest a worker stays frozen while its `thaw` has not come. */
const FREEZE_MAX_MS = 15_000;

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
