// The one manager option observability adds. Declared and checked here rather
// than in src/options.ts so the metrics wiring stays in one place.
import type { MeterProvider } from '@opentelemetry/api';
import { InvalidArgumentError } from '../errors.js';
import { show } from '../options.js';

/** Manager options for observability, accepted by `new LockManager(clients, options)` next to LockManagerOptions. */
export interface ObservabilityOptions {
  /** where fencelock's metrics go (default: the global MeterProvider, i.e. a no-op until an OpenTelemetry SDK is registered) */
  meterProvider?: MeterProvider;
}

/** `options.meterProvider`, checked; undefined means "use the global provider". */
export function meterProviderOption(options: unknown): MeterProvider | undefined {
  if (options === null || typeof options !== 'object') return undefined;
  const provider = (options as { meterProvider?: unknown }).meterProvider;
  if (provider === undefined) return undefined;
  if (provider === null || typeof provider !== 'object' || typeof (provider as { getMeter?: unknown }).getMeter !== 'function')
    throw new InvalidArgumentError(
      `meterProvider must be an OpenTelemetry MeterProvider (an object with getMeter()), got ${show(provider)}`,
    );
  return provider as MeterProvider;
}
