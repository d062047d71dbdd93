/**
 * One timer for many deadlines. Ten thousand held locks need ten thousand
 * expiry checks and extensions, but not ten thousand Node timers: deadlines
 * sit in a binary heap and a single unref'd timer is armed for the earliest.
 * Everything due when it fires runs in that one callback.
 */
/** Something woken by the scheduler. An object rather than a closure: a held lock keeps one of these, nothing more. */
export interface Timed {
  onTimer(): void;
}

/** A scheduled wake-up; pass it to `cancel`. */
export interface Entry {
  readonly at: number;
  readonly seq: number;
  readonly target: Timed;
  cancelled: boolean;
}

export type Cancel = () => void;

export class Scheduler {
  private readonly heap: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private seq = 0;
  private live = 0;

  constructor(private readonly now: () => number) {}

  /** Runs `run` at monotonic time `at` (or soon after). */
  at(at: number, run: () => void): Cancel {
    const entry = this.schedule(at, { onTimer: run });
    return () => this.cancel(entry);
  }

  /** Calls `target.onTimer()` at monotonic time `at` (or soon after). */
  schedule(at: number, target: Timed): Entry {
    const entry: Entry = { at, seq: this.seq++, target, cancelled: false };
    this.push(entry);
    this.live++;
    if (at < this.armedFor) this.arm();
    return entry;
  }

  cancel(entry: Entry): void {
    if (entry.cancelled) return;
    entry.cancelled = true;
    this.live--;
    if (this.live === 0) this.disarm();
    // Cancelled entries leave the heap lazily, when they reach the top. Rebuild it once they outnumber
    // the live ones, so that locks re-armed again and again cannot make it grow without bound.
    else if (this.heap.length > 2 * this.live + 64) this.compact();
  }

  private compact(): void {
    const live = this.heap.filter((e) => !e.cancelled);
    this.heap.length = 0;
    for (const e of live) this.push(e);
  }

  get size(): number {
    return this.live;
  }

  stop(): void {
    for (const e of this.heap) e.cancelled = true;
    this.heap.length = 0;
    this.live = 0;
    this.disarm();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = this.now();
    const due: Entry[] = [];
    while (this.heap.length > 0 && (this.heap[0] as Entry).at <= now + 1) {
      const e = this.pop();
      if (!e.cancelled) {
        e.cancelled = true;
        this.live--;
        due.push(e);
      }
    }
    this.arm();
    for (const e of due) e.target.onTimer();
  }

  private arm(): void {
    while (this.heap.length > 0 && (this.heap[0] as Entry).cancelled) this.pop();
    const first = this.heap[0];
    if (!first) return this.disarm();
    if (this.timer && first.at >= this.armedFor) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = first.at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, first.at - this.now()));
    // Background upkeep must never keep a finished process alive.
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
    if (this.live === 0) this.heap.length = 0;
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i] as Entry, h[parent] as Entry)) break;
      [h[i], h[parent]] = [h[parent] as Entry, h[i] as Entry];
      i = parent;
    }
  }

  private pop(): Entry {
    const h = this.heap;
    const top = h[0] as Entry;
    const last = h.pop() as Entry;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l] as Entry, h[m] as Entry)) m = l;
        if (r < h.length && before(h[r] as Entry, h[m] as Entry)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m] as Entry, h[i] as Entry];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
