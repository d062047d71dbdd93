import type { Client } from './client-types.js';

/**
 * node-zookeeper-client 1.1 parses the server's replies in its socket's 'data' handler. When the bytes it reads
 * are out of step with their framing, the parser throws ("Unknown code: -386793471", "offset ... is out of
 * buffer range"), and a throw there is an uncaught exception: it ends the user's process (the library's own
 * issues #23, #39 and #70, open since 2014; seen here in the leader-kill fault test and, once, in a demo worker).
 * Two guards, installed before the client first connects:
 * - the bytes of a reply cut off by a dropped connection (a server killed mid-reply, or fencelock dropping a
 *   connection whose call outlived its deadline) are discarded when it closes, not read before the next
 *   connection's answers;
 * - a reply the parser still cannot read drops the connection instead of the process, as the library itself
 *   does for an answer out of order: the client connects again within its session, and the calls in flight
 *   fail with a connection loss, which every caller of the store already handles.
 */
export function guardFraming(client: Client): void {
  const manager = (client as unknown as { connectionManager?: Manager }).connectionManager;
  if (!manager || typeof manager.on !== 'function' || typeof manager.onSocketData !== 'function' || guarded.has(manager)) return;
  guarded.add(manager);
  manager.on('state', (state) => {
    if (state === DISCONNECTED) manager.pendingBuffer = null;
  });
  const parse = manager.onSocketData;
  // An own property: the library binds `this.onSocketData` to each new socket, and calls it again for the rest of a buffer.
  manager.onSocketData = function (this: Manager, buffer: Buffer): void {
    try {
      parse.call(this, buffer);
    } catch {
      this.pendingBuffer = null;
      this.socket?.destroy();
    }
  };
}

/** The part of the library's ConnectionManager the guards touch. */
interface Manager {
  on(event: 'state', listener: (state: number) => void): unknown;
  onSocketData(buffer: Buffer): void;
  pendingBuffer: Buffer | null;
  socket?: { destroy(): void };
}

/** ConnectionManager.STATES.DISCONNECTED: set when its socket closes, before it connects again. */
const DISCONNECTED = 0;

/** Managers already guarded (once per client). */
const guarded = new WeakSet<object>();
