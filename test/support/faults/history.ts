// A Jepsen-style history of lock holdings and a checker for it. All times are
// process.hrtime.bigint() (CLOCK_MONOTONIC), one clock for every process on
// the machine, so records from different worker processes compare directly.

export type EndReason = 'released' | 'lost';

export interface HistoryRecord {
  readonly resource: string;
  /** decimal, exact past 2^53 */
  readonly fence: string;
  /** the lock's owner token */
  readonly owner: string;
  readonly worker: string;
  /** ns, when acquire resolved */
  readonly acquiredAt: bigint;
  /** ns, end of guaranteed validity as the holder last knew it (acquire, then each extension) */
  readonly validUntil: bigint;
  /** ns, when release started or the loss was detected */
  readonly endedAt: bigint;
  readonly endReason: EndReason;
}

/** One attempted write to the protected store, in the order the store applied them. */
export interface StoreWrite {
  readonly fence: string;
  readonly accepted: boolean;
  /** ns, the writer's clock when it sent the write */
  readonly at: bigint;
}

export interface CheckResult {
  readonly ok: boolean;
  readonly violations: string[];
}

/** The window in which a holder may rightly act: [acquiredAt, min(endedAt, validUntil)]. */
const windowEnd = (r: HistoryRecord): bigint => (r.endedAt < r.validUntil ? r.endedAt : r.validUntil);

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const byAcquire = (a: HistoryRecord, b: HistoryRecord): number => (a.acquiredAt < b.acquiredAt ? -1 : a.acquiredAt > b.acquiredAt ? 1 : 0);

/**
 * Checks, per resource: (a) no two valid windows overlap; (b) fences strictly
 * increase in acquisition order; (c) with the store's log: accepted writes have
 * strictly increasing fences and every stale write was rejected. `storeLog` is
 * one resource's log (an array) or a log per resource.
 */
export function checkHistory(
  records: readonly HistoryRecord[],
  storeLog?: readonly StoreWrite[] | Readonly<Record<string, readonly StoreWrite[]>>,
): CheckResult {
  const violations: string[] = [];
  const t0 = records.reduce((min, r) => (r.acquiredAt < min ? r.acquiredAt : min), records[0]?.acquiredAt ?? 0n);
  const show = (r: HistoryRecord): string => formatRecord(r, t0);

  for (const [resource, list] of groupBy(records, (r) => r.resource)) {
    const sorted = [...list].sort(byAcquire);
    // (a) Sweep in start order, remembering the window reaching furthest: any later start before its end overlaps.
    let reach: HistoryRecord | undefined;
    for (const r of sorted) {
      if (reach && r.acquiredAt < windowEnd(reach) && r.acquiredAt < windowEnd(r)) {
        violations.push(`${resource}: overlapping valid windows\n  ${show(reach)}\n  ${show(r)}`);
      }
      if (!reach || windowEnd(r) > windowEnd(reach)) reach = r;
    }
    // (b) Only holdings with a non-empty window count: a holder frozen between its validity check and
    // recording acquiredAt holds nothing, and its stale fence is the store's business (c), not a lock bug.
    let prev: HistoryRecord | undefined;
    for (const r of sorted.filter((x) => windowEnd(x) > x.acquiredAt)) {
      if (prev && BigInt(r.fence) <= BigInt(prev.fence)) {
        violations.push(`${resource}: fence did not increase in acquisition order\n  ${show(prev)}\n  ${show(r)}`);
      }
      prev = r;
    }
  }

  for (const [resource, log] of Object.entries(storeLogs(records, storeLog))) {
    const holders = new Map(records.filter((x) => x.resource === resource).map((x) => [x.fence, x]));
    const showWrite = (w: StoreWrite): string => {
      const r = holders.get(w.fence);
      return `write fence=${w.fence} ${w.accepted ? 'accepted' : 'rejected'} at t+${ms(w.at - t0)}${r ? ` by ${show(r)}` : ''}`;
    };
    let last: StoreWrite | undefined;
    for (const w of log) {
      // Like the store, start from fence 0: any real fence (>= 1) beats it.
      const fresh = BigInt(w.fence) > (last ? BigInt(last.fence) : 0n);
      if (w.accepted && !fresh) violations.push(`${resource}: store accepted a stale write\n  ${showWrite(last!)}\n  ${showWrite(w)}`);
      if (!w.accepted && fresh)
        violations.push(
          `${resource}: store rejected a fresh write\n  ${last ? showWrite(last) : '(no accepted write before)'}\n  ${showWrite(w)}`,
        );
      if (w.accepted && fresh) last = w;
    }
  }
  return { ok: violations.length === 0, violations };
}

/** An array is the log of the history's only resource; anything else is ambiguous. */
function storeLogs(
  records: readonly HistoryRecord[],
  storeLog: readonly StoreWrite[] | Readonly<Record<string, readonly StoreWrite[]>> | undefined,
): Readonly<Record<string, readonly StoreWrite[]>> {
  if (storeLog === undefined) return {};
  if (!Array.isArray(storeLog)) return storeLog as Readonly<Record<string, readonly StoreWrite[]>>;
  const resources = new Set(records.map((r) => r.resource));
  if (resources.size > 1) throw new TypeError(`a single store log for ${resources.size} resources: pass { [resource]: log }`);
  return { [[...resources][0] ?? '']: storeLog };
}

const ms = (ns: bigint): string => (Number(ns) / 1e6).toFixed(3) + 'ms';

/** One line a human can compare with another: times relative to the history's first acquire. */
export function formatRecord(r: HistoryRecord, t0 = r.acquiredAt): string {
  return (
    `worker=${r.worker} fence=${r.fence} owner=${r.owner.slice(0, 12)} ` +
    `held [t+${ms(r.acquiredAt - t0)} .. t+${ms(r.endedAt - t0)}] ${r.endReason}, valid until t+${ms(r.validUntil - t0)}`
  );
}

/** One JSON line (no newline), bigints as decimal strings: for IPC or stdout between processes. */
export function encodeRecord(r: HistoryRecord): string {
  return JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

/** The inverse of encodeRecord; throws on anything that is not a whole record. */
export function decodeRecord(line: string): HistoryRecord {
  const o = JSON.parse(line) as Record<string, unknown>;
  const str = (k: string): string => {
    if (typeof o[k] !== 'string') throw new TypeError(`history record field ${k} is not a string: ${line}`);
    return o[k];
  };
  const endReason = str('endReason');
  if (endReason !== 'released' && endReason !== 'lost') throw new TypeError(`bad endReason in ${line}`);
  return {
    resource: str('resource'),
    fence: String(BigInt(str('fence'))),
    owner: str('owner'),
    worker: str('worker'),
    acquiredAt: BigInt(str('acquiredAt')),
    validUntil: BigInt(str('validUntil')),
    endedAt: BigInt(str('endedAt')),
    endReason,
  };
}
