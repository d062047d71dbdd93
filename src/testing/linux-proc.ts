// What Linux's /proc tells about our children that their own answers cannot: whether every thread of a
// process has really stopped after SIGSTOP, and whether the socket listening on a port is the process's own.
// Elsewhere (no /proc) both answer undefined and the callers go on as before.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** `/proc/<pid>/task/<tid>/stat`'s state letter: after the `)` that ends the command name, which may hold spaces. */
const stateOf = (stat: string): string => stat.charAt(stat.lastIndexOf(')') + 2);

/**
 * Whether every thread of `pid` is stopped (state T, or t when traced); undefined without /proc.
 * kill(SIGSTOP) returns before that: one thread takes the signal and only then stops the others, and until
 * it has been scheduled the rest of the process (a JVM's network threads) still runs and answers.
 */
export function allThreadsStopped(pid: number): boolean | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread has ended
    }
    const state = stateOf(stat);
    if (state !== 'T' && state !== 't' && state !== 'Z' && state !== 'X') return false;
  }
  return true;
}

/** The inodes of the TCP sockets (IPv4 and IPv6, any address) listening on `port`; undefined without /proc. */
function listenerInodes(port: number): Set<string> | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  let readAny = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    readAny = true;
    // `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...`; st 0A is LISTEN
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && f[1]?.endsWith(`:${hexPort}`) && f[9]) inodes.add(f[9]);
    }
  }
  return readAny ? inodes : undefined;
}

/**
 * Who listens on loopback `port`, as seen against `pid`: 'own' (a listening socket of `pid`), 'other' (a socket
 * of some other process: the port was taken twice), 'none' (nobody listens); undefined without /proc.
 */
export function listenerOf(pid: number, port: number): 'own' | 'other' | 'none' | undefined {
  const inodes = listenerInodes(port);
  if (inodes === undefined) return undefined;
  if (inodes.size === 0) return 'none';
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return undefined; // gone, or not ours to look at
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && inodes.has(inode)) return 'own';
  }
  return 'other';
}
