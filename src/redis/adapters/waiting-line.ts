/**
 * A first-in, first-out line of waiting entries that may leave before their turn (a timeout, an abort): they
 * stay where they are and are skipped when their turn comes, so leaving costs nothing. Taking the head is O(1):
 * the array is read from an index, and compacted once half of it (and at least 1,024 entries) has been read.
 * Used by the admission step (../admission.ts) and by each node's backpressure (in-flight.ts), where a
 * burst parks thousands of entries at once.
 */
export class WaitingLine<T> {
  #entries: Array<T | undefined> = [];
  #head = 0;

  /** @param gone whether an entry left before its turn (skipped by `shift`) */
  constructor(private readonly gone: (entry: T) => boolean) {}

  /** Entries in line, those that left and were not skipped yet included. */
  get length(): number {
    return this.#entries.length - this.#head;
  }

  push(entry: T): void {
    this.#entries.push(entry);
  }

  /** The oldest entry that has not left, taken out of the line; undefined when none is left. */
  shift(): T | undefined {
    while (this.#head < this.#entries.length) {
      const entry = this.#entries[this.#head];
      this.#entries[this.#head++] = undefined;
      if (this.#head >= this.#entries.length) {
        this.#entries = [];
        this.#head = 0;
      } else if (this.#head >= 1024 && this.#head * 2 >= this.#entries.length) {
        this.#entries = this.#entries.slice(this.#head);
        this.#head = 0;
      }
      if (entry !== undefined && !this.gone(entry)) return entry;
    }
    return undefined;
  }

  /** Each entry still in line that has not left, oldest first. */
  *waiting(): IterableIterator<T> {
    for (let i = this.#head; i < this.#entries.length; i++) {
      const entry = this.#entries[i];
      if (entry !== undefined && !this.gone(entry)) yield entry;
    }
  }
}
