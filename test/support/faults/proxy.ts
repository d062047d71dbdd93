// A TCP proxy in front of one Redis node, so tests can slow, hang, cut and
// partition the network path to that node without touching the process.
import net from 'node:net';

const HOST = '127.0.0.1';
/** Bytes a delayed direction may hold in user space before it stops reading its source (TCP backpressure then does the rest). */
const MAX_QUEUED_BYTES = 1 << 20;

export interface Proxy {
  readonly port: number;
  readonly targetPort: number;
  /** redis://127.0.0.1:PORT: give this to clients instead of the node's own URL */
  readonly url: string;
  /** open client connections */
  readonly connections: number;
  /** delay every chunk by `ms` in each direction (a round trip gains 2 x ms); order is kept */
  setLatency(ms: number): void;
  /** keep connections (old and new) open but move no bytes either way, like a dead network path; heal() lets the held bytes flow */
  blackhole(): void;
  /** RST every current connection (new ones are still accepted) */
  reset(): void;
  /** RST every current connection and every new one until heal() */
  partition(): void;
  /** back to forwarding (ends blackhole and partition; latency stays as set) */
  heal(): void;
  /** stop listening and RST everything; idempotent */
  close(): Promise<void>;
}

/** RST where the platform can (Node >= 20.10), a plain destroy otherwise. */
function rst(socket: net.Socket): void {
  if (socket.destroyed) return;
  const s = socket as net.Socket & { resetAndDestroy?: () => net.Socket };
  // A socket that never got a TCP handle cannot send an RST; destroy it instead.
  if (typeof s.resetAndDestroy === 'function' && !s.connecting) s.resetAndDestroy();
  else socket.destroy();
}

type Mode = 'forward' | 'blackhole' | 'partition';

interface Link {
  latency: number;
  mode: Mode;
}

/**
 * One direction of one connection. Bytes are held rather than dropped in a
 * blackhole: TCP never loses bytes mid-stream, and a dropped request would
 * shift every later Redis reply onto the wrong command.
 */
class Pipe {
  readonly #queue: Array<{ chunk: Buffer; due: number }> = [];
  #queued = 0;
  #lastDue = 0;
  #timer: NodeJS.Timeout | undefined;
  #ended = false;

  constructor(
    readonly src: net.Socket,
    readonly dst: net.Socket,
    readonly link: Link,
  ) {
    src.on('data', (chunk: Buffer) => this.#push(chunk));
    src.on('end', () => {
      this.#ended = true;
      this.flush();
    });
    dst.on('drain', () => this.flush());
    this.flush();
  }

  #push(chunk: Buffer): void {
    // max() keeps order when the latency is lowered while chunks are in flight.
    const due = Math.max(this.#lastDue, performance.now() + this.link.latency);
    this.#lastDue = due;
    this.#queue.push({ chunk, due });
    this.#queued += chunk.length;
    this.flush();
  }

  /** Write what is due, then arm one timer for the next chunk; read from src only while there is room. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.dst.destroyed) return this.stop();
    const held = this.link.mode !== 'forward';
    let now = performance.now();
    while (!held && this.#queue.length > 0 && this.#queue[0]!.due <= now && !this.dst.writableNeedDrain) {
      const { chunk } = this.#queue.shift()!;
      this.#queued -= chunk.length;
      this.dst.write(chunk);
      now = performance.now();
    }
    if (!held && this.#queue.length > 0 && !this.dst.writableNeedDrain) {
      this.#timer = setTimeout(() => this.flush(), Math.max(0, this.#queue[0]!.due - now));
    }
    if (!held && this.#ended && this.#queue.length === 0 && !this.dst.writableEnded) this.dst.end();
    const room = !held && this.#queued < MAX_QUEUED_BYTES && !this.dst.writableNeedDrain;
    if (room && this.src.isPaused()) this.src.resume();
    else if (!room && !this.src.isPaused()) this.src.pause();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
    this.#queued = 0;
  }
}

class Connection {
  readonly #pipes: Pipe[];
  constructor(
    readonly client: net.Socket,
    readonly upstream: net.Socket,
    link: Link,
    onGone: (c: Connection) => void,
  ) {
    this.#pipes = [new Pipe(client, upstream, link), new Pipe(upstream, client, link)];
    let open = 2;
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      // A hard failure on one side (the node died, the client reset) reaches the other as an RST;
      // a clean FIN travels through the pipe, behind the bytes still queued.
      a.on('close', (hadError) => {
        if (hadError) rst(b);
        if (--open === 0) {
          this.#pipes.forEach((p) => p.stop());
          onGone(this);
        }
      });
    }
  }

  flush(): void {
    this.#pipes.forEach((p) => p.flush());
  }

  reset(): void {
    this.#pipes.forEach((p) => p.stop());
    rst(this.client);
    rst(this.upstream);
  }
}

/** Starts a proxy on a free 127.0.0.1 port that forwards to 127.0.0.1:targetPort. */
export async function startProxy(targetPort: number): Promise<Proxy> {
  const link: Link = { latency: 0, mode: 'forward' };
  const conns = new Set<Connection>();
  let closed = false;
  let closing: Promise<void> | undefined;
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on('error', () => undefined);
    if (link.mode === 'partition' || closed) return rst(client);
    const upstream = net.connect({ port: targetPort, host: HOST, allowHalfOpen: true });
    upstream.on('error', () => undefined);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    conns.add(new Connection(client, upstream, link, (c) => conns.delete(c)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as net.AddressInfo;
  const resetAll = (): void => {
    for (const c of conns) c.reset();
  };
  const setMode = (mode: Mode): void => {
    link.mode = mode;
    for (const c of conns) c.flush();
  };

  return {
    port,
    targetPort,
    url: `redis://${HOST}:${port}`,
    get connections() {
      return conns.size;
    },
    setLatency(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`latency must be a finite number >= 0, got ${ms}`);
      link.latency = ms;
    },
    blackhole: () => setMode('blackhole'),
    reset: resetAll,
    partition() {
      setMode('partition');
      resetAll();
    },
    heal: () => setMode('forward'),
    close() {
      closing ??= new Promise<void>((resolve) => {
        closed = true;
        server.close(() => resolve());
        resetAll();
      });
      return closing;
    },
  };
}
