// Diagnostic only, not a benchmark: what waking another process through Redis costs on this machine, beside a
// round trip, with ioredis alone (no lock library). One fresh process publishes a message every 2 ms on a local
// node (the publisher is otherwise idle, as a releasing process is); another, subscribed and otherwise idle (as a
// waiter is), notes when each message's socket read came. Printed p50 and p99 ms: the publisher's write → the
// subscriber's read (the machine-wide clock), that read → ioredis's 'message' event (the subscriber's own work on
// waking), and a PING round trip in one process. The floor under any
// hand-over across processes (docs/benchmarks.md, fourteenth pass).
//
//   node --import tsx bench/notify-floor.ts [messages]
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startRedisNode } from '../src/testing/index.js';
import { machineNow, noteSocketTimes } from './socket-times.js';
import { percentile } from './stats.js';

const now = machineNow;
const argv = process.argv.slice(2);

if (argv[0] === '--subscriber') {
  // Each read's time, noted before ioredis parses it.
  const sockets = noteSocketTimes();
  const sub = new Redis(argv[1] as string);
  const delays: number[] = [];
  const parsing: number[] = [];
  sub.on('message', (_channel: string, sentAt: string) => {
    if (sentAt === 'end') {
      process.stdout.write(JSON.stringify({ delays, parsing }));
      sub.disconnect();
      return;
    }
    const readAt = sockets.lastRead();
    delays.push(readAt - Number(sentAt));
    parsing.push(now() - readAt);
  });
  await sub.subscribe('notify-floor');
  process.stderr.write('ready\n');
} else {
  const messages = Number(argv[0] ?? 2_000);
  const node = await startRedisNode();
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--subscriber', node.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    await new Promise<void>((ready) => child.stderr.once('data', () => ready()));
    const pub = new Redis(node.url);
    const trips: number[] = [];
    for (let i = 0; i < messages; i++) {
      await sleep(2);
      // The time is taken right before the write: ioredis writes a command at once when the connection is ready.
      await pub.publish('notify-floor', String(now()));
      await sleep(2);
      const t = performance.now();
      await pub.ping();
      trips.push(performance.now() - t);
    }
    await pub.publish('notify-floor', 'end');
    await new Promise((done) => child.on('exit', done));
    const { delays, parsing } = JSON.parse(out) as { delays: number[]; parsing: number[] };
    const ms = (xs: number[], p: number): string => (percentile(xs, p) as number).toFixed(3);
    console.log(
      `${messages} messages: publisher's write → subscriber's read p50 ${ms(delays, 50)} ms (p99 ${ms(delays, 99)}); ` +
        `the read → ioredis's 'message' event p50 ${ms(parsing, 50)} ms; ` +
        `a PING round trip in one process p50 ${ms(trips, 50)} ms (p99 ${ms(trips, 99)})`,
    );
    pub.disconnect();
  } finally {
    await node.stop();
  }
}
