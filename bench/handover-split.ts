// Diagnostic only, not a benchmark: W4's hand-overs split by where the next holder was. P fresh worker processes
// (default 4) with 4 callers each contend for one key on local nodes started here, holding it 1 ms, as W4 does,
// for `seconds` (default 6). Each hand-over is judged from the holds' times, on the machine-wide clock:
//
//   same process   the release granted this process's next caller (its reply carries the grant: local-queue.ts)
//   other process  the release granted another process's waiter, whose 'retry' event marks when it woke on the
//                  grant's message; from then to its acquire resolving is that process's own work
//
// Printed: acquisitions/s, the gap p50 (release() called to the next acquire resolved) of each kind, the woken →
// held p50, and the gap's tail. With `--timeline`, each worker also notes when its sockets were last written to
// (Node's own _write/_writev, so a corked write counts when it leaves) and read from ('data'), and an
// other-process hand-over is split further: release() called → the releaser's first socket write after it →
// the next holder's last socket read before it woke → woken → holding; a same-process one: release() called → its
// socket write → the read of the reply that granted the next caller → holding. `dir`: a tree with a build (default: this one), so two builds can be compared
// (docs/benchmarks.md, "A hand-over's caller before its background work").
//
//   npm run build && node --import tsx bench/handover-split.ts [dir] [seconds] [--nodes N] [--processes P] [--timeline]
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedisNode } from '../src/testing/index.js';
import { ACQUIRE_TIMEOUT, DRIFT_FACTOR, NODE_TIMEOUT, PROFILES, TTL } from './config.js';
import { numberOption, positionals } from './diagnostic-args.js';
import { settings } from './libraries/fencelock.js';
import { machineNow, noteSocketTimes } from './socket-times.js';
import { percentile } from './stats.js';

const { callersPerProcess: CALLERS, holdMs: HOLD_MS } = PROFILES.full.w4;
const WARMUP_PAIRS = PROFILES.full.warmupPairs;
const now = machineNow;

/**
 * One hold: when its acquire resolved, when release() was called, when its caller last woke ('retry', 0: never);
 * with --timeline, the process's first socket write after that release() and its last socket read before that
 * wake-up, or before the acquire resolved when it did not wake (0: not noted).
 */
type Hold = [acquiredAt: number, releasedAt: number, wokeAt: number, writtenAt: number, readAt: number];

async function worker(dir: string, urls: string[], startAt: number, endAt: number, index: number, timeline: boolean): Promise<void> {
  const sockets = timeline ? noteSocketTimes() : undefined;
  const { Redis } = await import('ioredis');
  const { LockManager } = (await import(`${dir}/dist/esm/index.js`)) as typeof import('../src/index.js');
  const clients = urls.map((url) => new Redis(url));
  // The bench's settings (bench/libraries/fencelock.ts).
  const locks = new LockManager(clients, {
    ttl: TTL,
    acquireTimeout: ACQUIRE_TIMEOUT,
    nodeTimeout: NODE_TIMEOUT,
    driftFactor: DRIFT_FACTOR,
    retry: settings.retry,
  });
  for (let i = 0; i < WARMUP_PAIRS; i++) await (await locks.acquire(`warm-up:${index}:${i}`)).release();
  // Callers of one process take turns, so the last wake-up before an acquire resolves is that caller's.
  let wokeAt = 0;
  let readAt = 0;
  locks.on('retry', () => {
    wokeAt = now();
    readAt = sockets?.lastRead() ?? 0;
  });
  const holds: Hold[] = [];
  await sleep(startAt - now());
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (now() < endAt) {
        wokeAt = 0;
        readAt = 0;
        const lock = await locks.acquire('handover-split');
        const acquiredAt = now();
        // Not woken by a message: the last read is the reply that granted it (a same-process hand-over's release).
        const [woke, read] = [wokeAt, wokeAt === 0 ? (sockets?.lastRead() ?? 0) : readAt];
        await sleep(HOLD_MS);
        const releasedAt = now();
        sockets?.noteNextWrite();
        const released = lock.release();
        // Written at once, or at the end of this turn (a corked socket): noted by the time the release settles.
        await released;
        holds.push([acquiredAt, releasedAt, woke, sockets?.firstWrite() ?? 0, read]);
      }
    }),
  );
  process.stdout.write(JSON.stringify(holds));
  await locks.close();
  for (const c of clients) c.disconnect();
}

function spawnWorker(args: string[]): Promise<Hold[]> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--worker', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('exit', (code) => (code === 0 ? done(JSON.parse(out) as Hold[]) : fail(new Error(`worker exited with ${code}`))));
  });
}

const argv = process.argv.slice(2);
if (argv[0] === '--worker') {
  const [, dir, urls, startAt, endAt, index, timeline] = argv as [string, string, string, string, string, string, string];
  await worker(dir, urls.split(','), Number(startAt), Number(endAt), Number(index), timeline === '1');
} else {
  const NODES = numberOption(argv, '--nodes', 1);
  const PROCESSES = numberOption(argv, '--processes', PROFILES.full.w4.processes);
  const TIMELINE = argv.includes('--timeline');
  const positional = positionals(
    argv.filter((a) => a !== '--timeline'),
    ['--nodes', '--processes'],
  );
  const dir = positional[0] === undefined ? new URL('..', import.meta.url).pathname : resolve(positional[0]);
  const seconds = Number(positional[1] ?? 6);
  const nodes = await Promise.all(Array.from({ length: NODES }, () => startRedisNode()));
  try {
    // Time enough for every worker to start and warm up before the window opens.
    const startAt = now() + 3_000;
    const endAt = startAt + seconds * 1_000;
    const urls = nodes.map((n) => n.url).join(',');
    const byProcess = await Promise.all(
      Array.from({ length: PROCESSES }, (_, i) =>
        spawnWorker([dir, urls, String(startAt), String(endAt), String(i), TIMELINE ? '1' : '0']),
      ),
    );
    const holds = byProcess.flatMap((hs, p) =>
      hs.map((h) => ({ p, acquiredAt: h[0], releasedAt: h[1], wokeAt: h[2], writtenAt: h[3], readAt: h[4] })),
    );
    holds.sort((a, b) => a.acquiredAt - b.acquiredAt);
    const same: number[] = [];
    const other: number[] = [];
    const wokenToHeld: number[] = [];
    // --timeline, other-process hand-overs whose every step was noted in order
    const steps = { toWrite: [] as number[], toRead: [] as number[], toWake: [] as number[] };
    // --timeline, same-process hand-overs: release() → its write → the reply's read → holding
    const sameSteps = { toWrite: [] as number[], toRead: [] as number[], toHeld: [] as number[] };
    for (let i = 1; i < holds.length; i++) {
      const prev = holds[i - 1] as (typeof holds)[number];
      const cur = holds[i] as (typeof holds)[number];
      const gap = cur.acquiredAt - prev.releasedAt;
      if (cur.p === prev.p) {
        same.push(gap);
        if (cur.wokeAt === 0 && prev.releasedAt <= prev.writtenAt && prev.writtenAt <= cur.readAt && cur.readAt <= cur.acquiredAt) {
          sameSteps.toWrite.push(prev.writtenAt - prev.releasedAt);
          sameSteps.toRead.push(cur.readAt - prev.writtenAt);
          sameSteps.toHeld.push(cur.acquiredAt - cur.readAt);
        }
      } else {
        other.push(gap);
        if (cur.wokeAt > prev.releasedAt) wokenToHeld.push(cur.acquiredAt - cur.wokeAt);
        if (prev.releasedAt <= prev.writtenAt && prev.writtenAt <= cur.readAt && cur.readAt <= cur.wokeAt) {
          steps.toWrite.push(prev.writtenAt - prev.releasedAt);
          steps.toRead.push(cur.readAt - prev.writtenAt);
          steps.toWake.push(cur.wokeAt - cur.readAt);
        }
      }
    }
    const all = [...same, ...other];
    const ms = (xs: number[], p = 50): string => (xs.length === 0 ? '-' : (percentile(xs, p) as number).toFixed(3));
    console.log(
      `${dir}, ${NODES} node(s), ${PROCESSES} processes × ${CALLERS} callers, ${seconds} s: ${(holds.length / seconds).toFixed(0)} acquisitions/s; ` +
        `gap p50 ${ms(all)} ms (p99 ${ms(all, 99)}); same process ${ms(same)} (${same.length}), ` +
        `other process ${ms(other)} (${other.length}), of which woken → held ${ms(wokenToHeld)}`,
    );
    if (TIMELINE)
      console.log(
        `  other process, step by step (p50 ms, ${steps.toWrite.length} hand-overs): release() → its write ${ms(steps.toWrite)}, ` +
          `→ the next holder's read ${ms(steps.toRead)}, → woken ${ms(steps.toWake)}, → holding ${ms(wokenToHeld)}\n` +
          `  same process, step by step (p50 ms, ${sameSteps.toWrite.length} hand-overs): release() → its write ${ms(sameSteps.toWrite)}, ` +
          `→ the reply's read ${ms(sameSteps.toRead)}, → holding ${ms(sameSteps.toHeld)}`,
      );
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
  }
}
