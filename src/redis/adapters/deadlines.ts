/**
 * One timer for all of a node's requests in flight, instead of one setTimeout
 * (and clearTimeout) per request. The timer is armed for the earliest deadline;
 * when it fires it expires every request that is due and re-arms for the next.
 * Requests almost always answer long before their deadline, so it rarely fires
 * with work to do. The pending entries form a list through the entries themselves:
 * tracking a request and marking it done link and unlink it, with no hash table and
 * nothing allocated (every request of a node passes here twice).
 */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
  /** @internal the list's links while the entry is pending (Deadlines only; undefined otherwise) */
  deadlinePrev: Deadline | undefined;
  /** @internal */
  deadlineNext: Deadline | undefined;
  /** @internal the entry is pending in a Deadlines list */
  deadlinePending: boolean;
}

export class Deadlines {
  /** pending entries, in the order they were tracked */
  private first: Deadline | undefined;
  private last: Deadline | undefined;
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  /** the performance.now() at which the timer fires (Infinity: not armed) */
  private armedFor = Infinity;

  /** `expire` runs once `at` (performance.now() ms) has passed, unless `done` was called first. */
  add(at: number, expire: () => void): Deadline {
    const entry: Deadline = { at, expire, deadlinePrev: undefined, deadlineNext: undefined, deadlinePending: false };
    this.track(entry);
    return entry;
  }

  /** As add, for an object that is its own entry (it saves a record and a closure per entry). Tracked again: its new `at` counts. */
  track(entry: Deadline): void {
    if (entry.deadlinePending) this.unlink(entry);
    entry.deadlinePending = true;
    entry.deadlinePrev = this.last;
    entry.deadlineNext = undefined;
    if (this.last) this.last.deadlineNext = entry;
    else this.first = entry;
    this.last = entry;
    this.size++;
    if (entry.at < this.armedFor) this.arm(entry.at);
    else if (this.size === 1) this.timer?.ref();
  }

  /** The request answered: it will not expire. Returns false if it had already expired (or was done). */
  done(entry: Deadline): boolean {
    if (!entry.deadlinePending) return false;
    this.unlink(entry);
    // An idle timer must not keep the process alive; it stays armed, so the next request need not re-arm it.
    if (this.size === 0) this.timer?.unref();
    return true;
  }

  private unlink(entry: Deadline): void {
    const { deadlinePrev: prev, deadlineNext: next } = entry;
    if (prev) prev.deadlineNext = next;
    else this.first = next;
    if (next) next.deadlinePrev = prev;
    else this.last = prev;
    entry.deadlinePrev = undefined;
    entry.deadlineNext = undefined;
    entry.deadlinePending = false;
    this.size--;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - performance.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    let next = Infinity;
    const due: Deadline[] = [];
    for (let entry = this.first; entry; entry = entry.deadlineNext) {
      if (entry.at <= now) due.push(entry);
      else if (entry.at < next) next = entry.at;
    }
    // In deadline order, also when a stalled event loop let several fall due at once (they were added in any order).
    due.sort((a, b) => a.at - b.at);
    for (const entry of due) {
      if (!this.done(entry)) continue; // answered by an earlier expiry's callback meanwhile
      entry.expire();
    }
    if (next < Infinity) this.arm(next);
  }
}
