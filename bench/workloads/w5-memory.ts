// W5 memory: many locks held at once with the library's auto-extension running, all waiting on one shared promise.
// metrics: locksHeld, heapBytesPerLock (net of the harness's own per-hold cost), heapBytesPerHoldGross, harnessBytesPerHold, rssBytesPerLock, eventLoopDelayP99Ms, eventLoopDelayMaxMs,
//          holdCommandsPerLock (commands during the hold alone: the extensions), acquireMs, holdMs
// ops = locks; commands and CPU per op cover acquiring, holding and releasing them.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkloadResult } from '../types.js';
import { errorText, libraryOf, Meter, perOperation, settleWithin, warmup, type WorkloadContext } from './common.js';

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('W5 needs node --expose-gc');
  gc();
  gc();
}

type Hold = (key: string, until: Promise<void>, onHeld: () => void) => Promise<void>;

interface Holding {
  readonly holds: Array<Promise<void>>;
  held(): number;
  errors(): number;
  errorSample(): string | undefined;
  releaseAll(): void;
}

/** Starts `count` holds through `hold`, at most `concurrency` acquisitions in flight, and resolves once all are held (or failed). */
async function holdMany(hold: Hold, prefix: string, count: number, concurrency: number): Promise<Holding> {
  let errors = 0;
  let errorSample: string | undefined;
  let held = 0;
  let releaseAll = (): void => undefined;
  const until = new Promise<void>((resolve) => (releaseAll = resolve));
  // at most `concurrency` acquisitions in flight, so that no library meets a burst of 10,000 parallel round trips
  const holds: Array<Promise<void>> = [];
  let inFlight = 0;
  let slotFreed = (): void => undefined;
  for (let i = 0; i < count; i++) {
    while (inFlight >= concurrency) await new Promise<void>((resolve) => (slotFreed = resolve));
    inFlight++;
    let settled = false;
    const done = (): void => {
      if (settled) return;
      settled = true;
      inFlight--;
      slotFreed();
    };
    holds.push(
      hold(`${prefix}:${i}`, until, () => {
        held++;
        done();
      }).catch((e: unknown) => {
        errors++;
        errorSample ??= errorText(e);
        done();
      }),
    );
  }
  for (let i = 0; i < 600_000 && held + errors < count; i++) await sleep(10); // bounded by the cell timeout anyway
  return { holds, held: () => held, errors: () => errors, errorSample: () => errorSample, releaseAll };
}

/**
 * The harness's own heap per hold (a pending async function, its promise and callbacks, the same for every
 * library), measured with holds that take no lock: subtracted, so heapBytesPerLock is the library's own cost.
 */
async function harnessBytesPerHold(count: number, concurrency: number): Promise<number> {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const noop: Hold = async (_key, until, onHeld) => {
    onHeld();
    await until;
  };
  const holding = await holdMany(noop, 'w5-baseline', count, concurrency);
  collectGarbage();
  const bytes = (process.memoryUsage().heapUsed - before) / count;
  holding.releaseAll();
  await Promise.all(holding.holds);
  return bytes;
}

/**
 * The heap while the locks are held, at its quietest: the lowest of a few samples (each after a full GC)
 * taken after the event-loop-delay window (a forced GC would show up there). Extension requests in flight
 * at one instant (their commands, buffers and promises) are not state the library keeps per lock, and one
 * sample taken during an extension round counted them: up to ±50 % between runs.
 */
async function quietestHeap(samples = 5, everyMs = 250): Promise<NodeJS.MemoryUsage> {
  let quietest: NodeJS.MemoryUsage | undefined;
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(everyMs);
    collectGarbage();
    const sample = process.memoryUsage();
    if (!quietest || sample.heapUsed < quietest.heapUsed) quietest = sample;
  }
  return quietest as NodeJS.MemoryUsage;
}

export async function run(ctx: WorkloadContext): Promise<WorkloadResult> {
  const { admin, profile } = ctx;
  const lib = libraryOf(ctx);
  const { locks, holdMs, concurrency } = profile.w5;
  const holdWithAutoExtend = lib.holdWithAutoExtend?.bind(lib);
  if (!holdWithAutoExtend) throw new Error(`${lib.name} has no auto-extension`);
  await warmup(lib, profile.warmupPairs, 'w5');
  const harnessBytes = await harnessBytesPerHold(locks, concurrency);

  collectGarbage();
  const heapBefore = process.memoryUsage();
  const meter = await Meter.start(admin);
  const acquireStart = performance.now();
  const holding = await holdMany(holdWithAutoExtend, 'w5', locks, concurrency);
  const acquireMs = performance.now() - acquireStart;

  const holdMeter = await Meter.start(admin);
  const eld = monitorEventLoopDelay({ resolution: 5 });
  eld.enable();
  await sleep(holdMs);
  eld.disable();
  const holdMetered = await holdMeter.stop();
  const heapHeld = await quietestHeap(profile.w5.heapSamples ?? 5);
  const locksHeld = holding.held();

  holding.releaseAll();
  const allReleased = await settleWithin(holding.holds, 60_000);
  const metered = await meter.stop();
  const { commands, cpu } = perOperation(metered, locks);
  const errorSample = holding.errorSample();
  const grossBytes = (heapHeld.heapUsed - heapBefore.heapUsed) / locks;
  return {
    ops: locks,
    metrics: {
      locksHeld,
      heapBytesPerLock: grossBytes - harnessBytes,
      heapBytesPerHoldGross: grossBytes,
      harnessBytesPerHold: harnessBytes,
      rssBytesPerLock: (heapHeld.rss - heapBefore.rss) / locks,
      eventLoopDelayP99Ms: eld.percentile(99) / 1e6,
      eventLoopDelayMaxMs: eld.max / 1e6,
      holdCommandsPerLock: holdMetered.commands.total / locks,
      acquireMs,
      holdMs,
    },
    commands,
    cpu,
    errors: holding.errors(),
    ...(errorSample ? { errorSample } : {}),
    ...(allReleased ? {} : { notes: ['some holds had not ended 60 s after they were told to release'] }),
  };
}
