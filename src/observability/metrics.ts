// OpenTelemetry instruments, recorded through @opentelemetry/api only. Without
// an SDK installed the API hands out its no-op meter: then no instrument is
// even created, and every call here returns after one provider lookup (no
// attribute objects, no clock reads). docs/observability.md lists them all.
import {
  createNoopMeter,
  metrics,
  type Meter,
  ValueType,
  type Counter,
  type Histogram,
  type MeterProvider,
  type ObservableGauge,
  type UpDownCounter,
} from '@opentelemetry/api';

/** Instrumentation scope name: the `otel_scope_name` label in a Prometheus scrape. */
export const METER_NAME = 'fencelock';

/** Which API call an acquire belongs to. */
export type AcquireMethod = 'acquire' | 'tryAcquire' | 'withLock';
/**
 * How an acquire ended: `busy` is a tryAcquire that found another holder
 * (it resolves null), `aborted` covers the caller's signal and close(),
 * `error` anything unexpected.
 */
export type AcquireOutcome = 'acquired' | 'busy' | 'timeout' | 'no_quorum' | 'aborted' | 'error';
/** How a held lock ended. */
export type HoldOutcome = 'released' | 'lost';
/** `retrying`: an auto-extension round that was inconclusive (node errors) and is tried again; `lost`: the lock was lost by it. */
export type ExtensionFailure = 'retrying' | 'lost';

// Seconds, as OpenTelemetry and Prometheus both recommend; the SDK's default
// buckets are meant for milliseconds and would put every lock wait in the first one.
const ACQUIRE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const HOLD_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

interface Instruments {
  readonly acquireDuration: Histogram;
  readonly holdDuration: Histogram;
  readonly attempts: Counter;
  readonly retries: Counter;
  readonly held: UpDownCounter;
  readonly lost: Counter;
  readonly nodeErrors: Counter;
  readonly extensionFailures: Counter;
  readonly quarantines: Counter;
  readonly repairDuration: Histogram;
  readonly untrusted: ObservableGauge;
}

function createInstruments(meter: Meter): Instruments {
  const integer = { valueType: ValueType.INT };
  return {
    acquireDuration: meter.createHistogram('fencelock.acquire.duration', {
      unit: 's',
      description: 'Time an acquire call took, from the call to the lock (or the failure), by outcome',
      advice: { explicitBucketBoundaries: ACQUIRE_BUCKETS },
    }),
    holdDuration: meter.createHistogram('fencelock.hold.duration', {
      unit: 's',
      description: 'Time a lock was held, from acquired until released or lost',
      advice: { explicitBucketBoundaries: HOLD_BUCKETS },
    }),
    attempts: meter.createCounter('fencelock.acquire.attempts', {
      ...integer,
      unit: '{attempt}',
      description: 'Tries to take a lock: one per acquire call plus one per retry',
    }),
    retries: meter.createCounter('fencelock.acquire.retries', {
      ...integer,
      unit: '{retry}',
      description: 'Tries again after waiting, by what woke the waiter',
    }),
    held: meter.createUpDownCounter('fencelock.locks.held', { ...integer, unit: '{lock}', description: 'Locks currently held' }),
    lost: meter.createCounter('fencelock.locks.lost', {
      ...integer,
      unit: '{lock}',
      description: 'Locks lost while held: an extension failed, or the lease ran out',
    }),
    nodeErrors: meter.createCounter('fencelock.node.errors', {
      ...integer,
      unit: '{error}',
      description: 'Failed requests and connection errors, by node and operation',
    }),
    extensionFailures: meter.createCounter('fencelock.extend.failures', {
      ...integer,
      unit: '{extension}',
      description: 'Extension rounds that did not extend the lease',
    }),
    quarantines: meter.createCounter('fencelock.node.quarantines', {
      ...integer,
      unit: '{quarantine}',
      description: 'Nodes (or Cluster slots) seen to have lost their data, each put in restart quarantine, by node',
    }),
    repairDuration: meter.createHistogram('fencelock.node.repair.duration', {
      unit: 's',
      description: 'Time a repair of a node that lost its data took, from its start until the node was trusted again',
      advice: { explicitBucketBoundaries: ACQUIRE_BUCKETS },
    }),
    untrusted: meter.createObservableGauge('fencelock.nodes.untrusted', {
      ...integer,
      unit: '{node}',
      description: 'Nodes (or Cluster slots) known to have lost their data and not repaired yet (quarantined or awaiting repair)',
    }),
  };
}

/** The error's stable code (NODE_TIMEOUT, ECONNREFUSED, ...) or else its class name: a label of bounded cardinality. */
function errorType(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? code : error.name;
}

/**
 * fencelock's instruments. Resource names are deliberately never attributes:
 * they are unbounded and would explode a metrics backend's series count.
 */
export class LockMetrics {
  readonly #provider: MeterProvider | undefined;
  /** the instruments of #from; undefined while #from is the API's no-op (nothing would be recorded) */
  #instruments: Instruments | undefined;
  #from: MeterProvider | undefined;
  /** the untrusted-nodes gauge's sources, registered again on the instruments of every new provider */
  readonly #untrusted: Array<() => number> = [];

  /** With no provider, the global one is used (whatever `metrics.setGlobalMeterProvider` installed, at the time of recording). */
  constructor(provider?: MeterProvider) {
    this.#provider = provider;
  }

  // Looked up on every recording rather than once: an SDK registered after the
  // manager was created (a common import-order accident) is still picked up.
  #current(): Instruments | undefined {
    const provider = this.#provider ?? metrics.getMeterProvider();
    if (provider !== this.#from) {
      this.#from = provider;
      const meter = provider.getMeter(METER_NAME);
      const instruments = meter === createNoopMeter() ? undefined : createInstruments(meter);
      if (instruments) for (const count of this.#untrusted) instruments.untrusted.addCallback((result) => result.observe(count()));
      this.#instruments = instruments;
    }
    return this.#instruments;
  }

  /** A real meter is in use: recording is worth its clock reads and attribute objects. */
  get live(): boolean {
    return this.#current() !== undefined;
  }

  acquireStarted(): void {
    this.#current()?.attempts.add(1);
  }

  acquireEnded(method: AcquireMethod, outcome: AcquireOutcome, seconds: number): void {
    this.#current()?.acquireDuration.record(seconds, { 'fencelock.method': method, 'fencelock.outcome': outcome });
  }

  retried(reason: 'notified' | 'timer'): void {
    const i = this.#current();
    if (!i) return;
    i.attempts.add(1);
    i.retries.add(1, { 'fencelock.reason': reason });
  }

  lockHeld(): void {
    this.#current()?.held.add(1);
  }

  lockEnded(outcome: HoldOutcome, seconds: number): void {
    const i = this.#current();
    if (!i) return;
    i.held.add(-1);
    i.holdDuration.record(seconds, { 'fencelock.outcome': outcome });
    if (outcome === 'lost') i.lost.add(1);
  }

  nodeError(node: string, operation: string, error: Error): void {
    this.#current()?.nodeErrors.add(1, { 'fencelock.node': node, 'fencelock.operation': operation, 'error.type': errorType(error) });
  }

  extensionFailed(outcome: ExtensionFailure): void {
    this.#current()?.extensionFailures.add(1, { 'fencelock.outcome': outcome });
  }

  nodeQuarantined(node: string): void {
    this.#current()?.quarantines.add(1, { 'fencelock.node': node });
  }

  nodeRepaired(node: string, seconds: number): void {
    this.#current()?.repairDuration.record(seconds, { 'fencelock.node': node });
  }

  /** Reports `count()` as the untrusted-nodes gauge at every collection, of this provider and of any registered later. */
  watchUntrusted(count: () => number): void {
    // Instruments made by this very lookup register the list as it was before this source joins it.
    const instruments = this.#current();
    this.#untrusted.push(count);
    instruments?.untrusted.addCallback((result) => result.observe(count()));
  }
}
