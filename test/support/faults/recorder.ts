// Turns a LockManager's holdings into history records, at the moments the
// checker needs: acquire resolved, each extension, release started or loss detected.
import type { AcquireOptions, Lock, LockManager, LockEvents, WithLockOptions } from '../../../src/index.js';
import type { HistoryRecord } from './history.js';

const now = (): bigint => process.hrtime.bigint();
/** Floor, so a record never claims more validity than the lock had. */
const msToNs = (ms: number): bigint => BigInt(Math.max(0, Math.floor(ms * 1e6)));
const keyOf = (resources: readonly string[], fence: bigint): string => `${fence}\0${resources.join('\0')}`;

interface Holding {
  readonly lock: Lock;
  readonly acquiredAt: bigint;
  validUntil: bigint;
}

/** Records every lock it is given to `sink`, one record per resource, when the holding ends. */
export class Recorder {
  readonly #holdings = new Map<string, Holding>();
  readonly #onExtended = (e: LockEvents['extended'][0]): void => {
    const h = this.#holdings.get(keyOf(e.resources, e.fence));
    if (h) h.validUntil = now() + msToNs(e.remaining);
  };

  constructor(
    readonly manager: LockManager,
    readonly worker: string,
    readonly sink: (record: HistoryRecord) => void,
  ) {
    manager.on('extended', this.#onExtended);
  }

  /** Call right after acquire resolved; the record goes to the sink when the lock's signal aborts (release or loss). */
  track(lock: Lock): void {
    const acquiredAt = now();
    const h: Holding = { lock, acquiredAt, validUntil: acquiredAt + msToNs(lock.remaining()) };
    const key = keyOf(lock.resources, lock.fence);
    const end = (): void => {
      const endedAt = now();
      this.#holdings.delete(key);
      // The signal's reason tells a loss (LockLostError) from a release (LockReleasedError).
      const lost = (lock.signal.reason as { code?: unknown } | undefined)?.code === 'LOCK_LOST';
      for (const resource of lock.resources) {
        this.sink({
          resource,
          fence: lock.fence.toString(),
          owner: lock.value,
          worker: this.worker,
          acquiredAt,
          validUntil: h.validUntil,
          endedAt,
          endReason: lost ? 'lost' : 'released',
        });
      }
    };
    if (lock.signal.aborted) return end();
    this.#holdings.set(key, h);
    lock.signal.addEventListener('abort', end, { once: true });
  }

  /** manager.withLock with the holding recorded. */
  withLock<T>(resource: string | readonly string[], fn: (lock: Lock) => Promise<T>, opts?: WithLockOptions): Promise<T> {
    return this.manager.withLock(
      resource,
      (lock) => {
        this.track(lock);
        return fn(lock);
      },
      opts,
    );
  }

  /** manager.acquire with the holding recorded (its explicit extends too: Lock.extend emits 'extended'). */
  async acquire(resource: string | readonly string[], opts?: AcquireOptions): Promise<Lock> {
    const lock = await this.manager.acquire(resource, opts);
    this.track(lock);
    return lock;
  }

  /** manager.tryAcquire with the holding recorded; null (held by another) records nothing. */
  async tryAcquire(resource: string | readonly string[], opts?: Omit<AcquireOptions, 'timeout'>): Promise<Lock | null> {
    const lock = await this.manager.tryAcquire(resource, opts);
    if (lock) this.track(lock);
    return lock;
  }

  /** Stops listening to the manager (holdings still open are then recorded without later extensions). */
  close(): void {
    this.manager.off('extended', this.#onExtended);
  }
}
