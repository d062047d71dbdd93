// What every workload shares: its inputs, the clock, warmup, and the commands + CPU meter.
import type { Profile } from '../config.js';
import type { CommandSnapshot, RedisAdmin } from '../redis-admin.js';
import { perOp } from '../stats.js';
import type { CellSpec, CommandCount, CpuCount, LockLibrary } from '../types.js';

export interface WorkloadContext {
  spec: CellSpec;
  profile: Profile;
  /** set up on the cell's nodes; undefined for W4, whose worker processes set up their own */
  lib: LockLibrary | undefined;
  admin: RedisAdmin;
}

/** The library of an in-process workload. */
export function libraryOf(ctx: WorkloadContext): LockLibrary {
  if (!ctx.lib) throw new Error(`${ctx.spec.workload} runs in the cell process but got no library`);
  return ctx.lib;
}

/** Milliseconds on a clock every process of the machine shares (epoch-based, sub-ms resolution). */
export const now = (): number => performance.timeOrigin + performance.now();

export const sleepUntil = (at: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - now())));

/** Sequential acquire+release pairs on throw-away keys: scripts loaded, connections and JIT warm. */
export async function warmup(lib: LockLibrary, pairs: number, prefix: string): Promise<void> {
  for (let i = 0; i < pairs; i++) await lib.release(await lib.acquire(`${prefix}:warmup:${i}`));
}

/** Counts Redis commands (all nodes) and this process's CPU between start() and stop(). */
export class Meter {
  private constructor(
    private readonly admin: RedisAdmin,
    private readonly before: CommandSnapshot,
    private readonly cpuBefore: NodeJS.CpuUsage,
  ) {}

  static async start(admin: RedisAdmin): Promise<Meter> {
    const before = await admin.snapshot();
    return new Meter(admin, before, process.cpuUsage());
  }

  /** CPU is read at once, commands after one more INFO round trip. Per-op values: see perOperation(). */
  async stop(): Promise<Metered> {
    const d = process.cpuUsage(this.cpuBefore);
    const after = await this.admin.snapshot();
    return { commands: this.admin.diff(this.before, after), cpu: { userUs: d.user, systemUs: d.system, perOpUs: null } };
  }
}

export interface Metered {
  commands: CommandCount;
  cpu: CpuCount;
}

/** Fill in the per-operation values once the number of operations is known. */
export function perOperation(m: Metered, ops: number): Metered {
  return {
    commands: { ...m.commands, perOp: perOp(m.commands.total, ops), redisCpuPerOpUs: perOp(m.commands.redisCpuUs ?? 0, ops) },
    cpu: { ...m.cpu, perOpUs: perOp(m.cpu.userUs + m.cpu.systemUs, ops) },
  };
}

/** A bounded wait for promises that may hang: resolves false if they have not all settled in time. */
export async function settleWithin(promises: readonly Promise<unknown>[], ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const all = Promise.allSettled(promises).then(() => true as const);
  try {
    return await Promise.race([all, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function errorText(e: unknown): string {
  return (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 300);
}

/** What a closed loop of callers measured: each pair's latency (ms), and what Redis did for them. */
export interface ClosedLoop {
  readonly pairs: number[];
  readonly commands: CommandCount;
  readonly cpu: CpuCount;
  readonly errors: number;
  readonly errorSample: string | undefined;
}

/**
 * `callers` loop acquire + release (caller c's i-th pair on `keyOf(c, i)`) for `durationMs` after a short start
 * gap, with Redis metered over exactly that window; pairs that end after it are not counted (W2, the design table).
 */
export async function closedLoop(
  lib: LockLibrary,
  admin: RedisAdmin,
  callers: number,
  durationMs: number,
  keyOf: (caller: number, i: number) => string,
): Promise<ClosedLoop> {
  const pairs: number[] = [];
  let errors = 0;
  let errorSample: string | undefined;
  const meter = await Meter.start(admin);
  const startAt = now() + 20;
  const endAt = startAt + durationMs;
  await sleepUntil(startAt);
  const caller = async (c: number): Promise<void> => {
    for (let i = 0; now() < endAt; i++) {
      const t0 = performance.now();
      try {
        await lib.release(await lib.acquire(keyOf(c, i)));
        if (now() <= endAt) pairs.push(performance.now() - t0);
      } catch (e) {
        errors++;
        errorSample ??= errorText(e);
      }
    }
  };
  const running = Array.from({ length: callers }, (_, c) => caller(c));
  await sleepUntil(endAt);
  const metered = await meter.stop();
  await Promise.all(running);
  const { commands, cpu } = perOperation(metered, pairs.length);
  return { pairs, commands, cpu, errors, errorSample };
}
