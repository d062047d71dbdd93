/** Messages between the demo's parent process and its worker processes (over the IPC channel of fork). */

export interface WorkerConfig {
  readonly id: number;
  readonly lockUrls: readonly string[];
  readonly storageUrl: string;
  readonly key: string;
  readonly ttl: number;
  /** ms of simulated work between reading and writing the stock */
  readonly workMs: number;
}

export type ParentMessage =
  | { readonly type: 'start'; readonly config: WorkerConfig }
  /** pause inside the next critical section, between read and write, so the parent can freeze this process there */
  | { readonly type: 'freeze-next' };

export type WorkerMessage =
  /** one completed critical section; times are process.hrtime.bigint() in ns as strings (one clock for all processes) */
  | {
      readonly type: 'hold';
      readonly worker: number;
      readonly fence: string;
      readonly waitMs: number;
      readonly acquiredAt: string;
      readonly releasedAt: string;
      readonly sold: boolean;
      readonly stale: boolean;
      readonly lost: boolean;
    }
  | { readonly type: 'holding'; readonly worker: number; readonly fence: string }
  | { readonly type: 'freeze-me'; readonly worker: number }
  | { readonly type: 'lost'; readonly worker: number; readonly fence: string }
  | { readonly type: 'error'; readonly worker: number; readonly message: string }
  | { readonly type: 'done'; readonly worker: number };
