// The observability surface; docs/observability.md describes it.
export { DIAGNOSTICS_CHANNELS, type AcquireTraceContext } from './diagnostics.js';
export { METER_NAME, type AcquireMethod, type AcquireOutcome, type ExtensionFailure, type HoldOutcome } from './metrics.js';
export { type ObservabilityOptions } from './meter-provider.js';
export { Telemetry } from './telemetry.js';
