/**
 * One timer for all of a node's requests in flight, instead of one setTimeout
 * (and clearTimeout) per request: on the hot path a request costs a Set insert
 * and delete. The timer is armed for the earliest deadline; when it fires it
 * expires every request that is due and re-arms for the next. Requests almost
 * always answer long before their deadline, so it rarely fires with work to do.
 */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
}

export class Deadlines {
  private readonly pending = new Set<Deadline>();
  private timer: NodeJS.Timeout | undefined;
  /** the performance.now() at which the timer fires (Infinity: not armed) */
  private armedFor = Infinity;

  /** `expire` runs once `at` (performance.now() ms) has passed, unless `done` was called first. */
  add(at: number, expire: () => void): Deadline {
    const entry: Deadline = { at, expire };
    this.track(entry);
    return entry;
  }

  /** As add, for an object that is its own entry (it saves a record and a closure per entry). */
  track(entry: Deadline): void {
    this.pending.add(entry);
    if (entry.at < this.armedFor) this.arm(entry.at);
    else if (this.pending.size === 1) this.timer?.ref();
  }

  /** The request answered: it will not expire. Returns false if it had already expired (or was done). */
  done(entry: Deadline): boolean {
    if (!this.pending.delete(entry)) return false;
    // An idle timer must not keep the process alive; it stays armed, so the next request need not re-arm it.
    if (this.pending.size === 0) this.timer?.unref();
    return true;
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
    for (const entry of this.pending) {
      if (entry.at <= now) due.push(entry);
      else if (entry.at < next) next = entry.at;
    }
    // In deadline order, also when a stalled event loop let several fall due at once (they were added in any order).
    due.sort((a, b) => a.at - b.at);
    for (const entry of due) {
      if (!this.pending.delete(entry)) continue; // answered by an earlier expiry's callback meanwhile
      entry.expire();
    }
    if (next < Infinity) this.arm(next);
  }
}
