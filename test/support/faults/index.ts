// Fault-injection toolkit for the reliability suite (issue 4): network faults
// (proxy), clock drift (faketime), paused processes (workers), a fenced store,
// and a history checker that judges what happened.
export { startProxy, type Proxy } from './proxy.js';
export {
  checkHistory,
  decodeRecord,
  encodeRecord,
  formatRecord,
  type CheckResult,
  type EndReason,
  type HistoryRecord,
  type StoreWrite,
} from './history.js';
export { Recorder } from './recorder.js';
export { FencedStore, type StoredValue } from './fenced-store.js';
export { faketimeAvailable, faketimeCommandPrefix, libfaketimePath, startDriftingNode } from './faketime.js';
export {
  freeze,
  startWorkers,
  thaw,
  type LockWorker,
  type WorkerExit,
  type WorkerPool,
  type WorkerStats,
  type WorkloadConfig,
} from './workers.js';
export { assertCleanExits, storeLogs } from './verify.js';
export { armLeakWatchdog } from './leak-watchdog.js';
export {
  variedOps,
  type AcquireOp,
  type HoldOp,
  type OpKind,
  type OpVariation,
  type Slice,
  type TryAcquireOp,
  type WithLockOp,
} from './ops.js';
