// Diagnostics only (bench/handover-split.ts --timeline, bench/notify-floor.ts): when this process's sockets were
// last read from and first written to, on the machine-wide clock, so that two processes' times compare. Node's
// own Socket methods are wrapped: a read counts at its 'data' event (before the client library parses it), a
// write when it leaves for the kernel (_write, _writev: a corked write counts when the cork comes off).
import { Socket } from 'node:net';

/** The machine-wide clock, in ms: comparable across processes. */
export const machineNow = (): number => performance.timeOrigin + performance.now();

export interface SocketTimes {
  /** the last socket read so far (0: none) */
  lastRead(): number;
  /** from now on, note the next write (firstWrite) */
  noteNextWrite(): void;
  /** the first write since noteNextWrite (0: none yet) */
  firstWrite(): number;
}

/** Starts noting this process's socket reads and writes (once per process). */
export function noteSocketTimes(): SocketTimes {
  let lastRead = 0;
  let watching = false;
  let firstWrite = 0;
  const proto = Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ['_write', '_writev']) {
    const original = proto[name] as (...args: unknown[]) => unknown;
    proto[name] = function (this: unknown, ...args: unknown[]): unknown {
      if (firstWrite === 0 && watching) firstWrite = machineNow();
      return original.apply(this, args as []);
    };
  }
  const emit = Socket.prototype.emit;
  Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'data') lastRead = machineNow();
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  };
  return {
    lastRead: () => lastRead,
    noteNextWrite: () => {
      watching = true;
      firstWrite = 0;
    },
    firstWrite: () => firstWrite,
  };
}
