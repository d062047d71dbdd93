// Two entries of the client list that reach one server would be two votes from one failure domain. What is
// compared is the node's address as written, without resolving a host name (that would be a network call at
// construction): host and port, with the loopback aliases (localhost, 127.0.0.1, ::1) taken as one host,
// ioredis's and node-redis's defaults filled in (`new Redis(7501)` is localhost:7501), and the database
// number ignored (two databases of one server are one server). Two different names of one server (a DNS
// name and its address) are not caught.

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']);

/**
 * The server a node's name (`host:port`, `host:port/db`, `[v6]:port`, a socket path, `cluster(…)`,
 * `sentinel(…)`) reaches, as a key: equal keys are one server.
 */
export function serverKey(name: string): string {
  const hostPort = /^(.+):(\d+)(?:\/\d+)?$/.exec(name);
  if (!hostPort || name.startsWith('cluster(') || name.startsWith('sentinel(') || name.startsWith('/')) return name;
  const host = hostPort[1]!.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return `${LOOPBACK.has(host) ? 'loopback' : host}:${Number(hostPort[2])}`;
}

/** What the duplicate check compares, for the message: so a user knows which mistakes it catches and which not. */
export const SAME_SERVER_RULE =
  'compared: host and port (localhost, 127.0.0.1 and ::1 as one host; the database number ignored; host names are not resolved)';
