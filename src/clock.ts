/** Monotonic milliseconds: immune to wall-clock jumps, so lease arithmetic never trusts Date.now(). */
export const monotonicNow = (): number => performance.now();
