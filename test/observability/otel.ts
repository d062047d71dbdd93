// Reads fencelock's metrics back through the real OpenTelemetry SDK (not a test file itself).
import assert from 'node:assert/strict';
import type { Attributes } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import type { LockManagerOptions, ObservabilityOptions } from '../../src/index.js';

/** A pull reader: metrics are read when the test calls collect(), never on a timer. */
class InMemoryReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** One point of a metric: its attributes and, for sums, the value; for histograms, count and sum. */
export interface Point {
  readonly attributes: Attributes;
  readonly value: number;
  readonly count: number;
  readonly sum: number;
}

/** A snapshot of every fencelock metric, by instrument name. */
export class Snapshot {
  constructor(readonly metrics: ReadonlyMap<string, MetricData>) {}

  /** The metric's points whose attributes include `match`. */
  points(name: string, match: Attributes = {}): Point[] {
    const metric = this.metrics.get(name);
    if (!metric) return [];
    const points: Point[] = [];
    for (const p of metric.dataPoints) {
      if (!Object.entries(match).every(([k, v]) => p.attributes[k] === v)) continue;
      if (metric.dataPointType === DataPointType.HISTOGRAM) {
        const h = p.value as Histogram;
        points.push({ attributes: p.attributes, value: h.count, count: h.count, sum: h.sum ?? 0 });
      } else {
        const value = p.value as number;
        points.push({ attributes: p.attributes, value, count: 1, sum: value });
      }
    }
    return points;
  }

  /** Counter/up-down counter total over the matching points (0 when none). */
  total(name: string, match: Attributes = {}): number {
    return this.points(name, match).reduce((sum, p) => sum + p.value, 0);
  }

  /** Histogram: how many values were recorded and their sum, over the matching points. */
  histogram(name: string, match: Attributes = {}): { count: number; sum: number } {
    return this.points(name, match).reduce((acc, p) => ({ count: acc.count + p.count, sum: acc.sum + p.sum }), { count: 0, sum: 0 });
  }

  /** How an instrument that must exist was exported: its unit and its kind as the SDK aggregates it. */
  kind(name: string): { unit: string; kind: 'histogram' | 'counter' | 'up-down counter' | 'gauge' } {
    const metric = this.metrics.get(name);
    assert.ok(metric, `no metric ${name} among ${[...this.metrics.keys()].join(', ')}`);
    const kind =
      metric.dataPointType === DataPointType.HISTOGRAM
        ? 'histogram'
        : metric.dataPointType === DataPointType.SUM
          ? metric.isMonotonic
            ? 'counter'
            : 'up-down counter'
          : 'gauge';
    return { unit: metric.descriptor.unit, kind };
  }
}

/** A MeterProvider with an in-memory reader; `read()` collects a snapshot of the 'fencelock' scope. */
export function inMemoryMetrics(): { provider: MeterProvider; read(): Promise<Snapshot>; shutdown(): Promise<void> } {
  const reader = new InMemoryReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async read() {
      const { resourceMetrics, errors } = await reader.collect();
      assert.deepEqual(errors, [], 'metric collection reported errors');
      const byName = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics) {
        if (scope.scope.name !== 'fencelock') continue;
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
      }
      return new Snapshot(byName);
    },
    shutdown: () => provider.shutdown(),
  };
}

/** Manager options that send metrics to `otel` (typed so the test harness, which knows only LockManagerOptions, passes them on). */
export function withProvider(options: LockManagerOptions, otel: { provider: MeterProvider }): LockManagerOptions {
  const withMetrics: LockManagerOptions & ObservabilityOptions = { ...options, meterProvider: otel.provider };
  return withMetrics;
}
