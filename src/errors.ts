/**
 * Every error fencelock throws extends LockError and carries a stable `code`,
 * so callers can branch on `err.code` without importing classes across
 * package versions.
 */
export class LockError extends Error {
  /**
   * Stable machine-readable code: `INVALID_ARGUMENT`, `ACQUIRE_TIMEOUT`, `NO_QUORUM`, `LOCK_LOST`,
   * `LOCK_RELEASED`, `CLOSED`, `NODE_ERROR` or `NODE_TIMEOUT`.
   */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input, found before any command reached Redis. */
export class InvalidArgumentError extends LockError {
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
}

/**
 * A setup error: the manager was given a URL (`redis://`, `etcd://`, `zk://`) whose client library, an optional
 * peer dependency, is not installed. Found before any network call, so it is bad input (`INVALID_ARGUMENT`),
 * never a quorum failure that waits out a timeout.
 */
export class MissingPackageError extends InvalidArgumentError {
  /** the npm package to install, e.g. `etcd3` */
  readonly packageName: string;
  constructor(packageName: string, neededBy: string, cause?: unknown) {
    super(`${neededBy} needs the ${packageName} package, which could not be loaded: npm install ${packageName}`);
    this.packageName = packageName;
    if (cause !== undefined) this.cause = cause;
  }
}

/** `acquire` waited its whole timeout without getting the lock. */
export class LockTimeoutError extends LockError {
  /** the resources the call asked for */
  readonly resources: readonly string[];
  /** the timeout it waited, in ms */
  readonly timeout: number;
  constructor(resources: readonly string[], timeout: number, detail = '') {
    super('ACQUIRE_TIMEOUT', `could not acquire ${describe(resources)} within ${timeout} ms${detail ? `: ${detail}` : ''}`);
    this.resources = resources;
    this.timeout = timeout;
  }
}

/** One node's failure inside a quorum operation. */
export interface NodeFailure {
  /** the node's address, e.g. `127.0.0.1:7001` */
  readonly node: string;
  /** what went wrong there (a {@link NodeError} naming the node, usually) */
  readonly error: Error;
}

/** A quorum could not be reached because nodes errored or timed out (not because someone else holds the lock). */
export class QuorumError extends LockError {
  /** the resources the call was about */
  readonly resources: readonly string[];
  /** each node that did not count toward the quorum, and why (errors, timeouts, restart quarantine, untrusted counters) */
  readonly nodeErrors: readonly NodeFailure[];
  constructor(resources: readonly string[], operation: string, succeeded: number, needed: number, nodeErrors: readonly NodeFailure[]) {
    const list = nodeErrors.map(nodeMessage).join('; ');
    super('NO_QUORUM', `${operation} ${describe(resources)}: ${succeeded} of ${needed} nodes needed for a quorum answered (${list})`, {
      cause: nodeErrors[0]?.error,
    });
    this.resources = resources;
    this.nodeErrors = nodeErrors;
  }
}

/** The lock is no longer held: an extension failed, or its validity ran out. */
export class LockLostError extends LockError {
  /** the resources of the lock that was lost */
  readonly resources: readonly string[];
  constructor(resources: readonly string[], reason: string, options?: { cause?: unknown }) {
    super('LOCK_LOST', `lock on ${describe(resources)} lost: ${reason}`, options);
    this.resources = resources;
  }
}

/** A Redis node failed a request: refused, timed out, or answered with an error reply. */
export class NodeError extends LockError {
  /** the node's address, e.g. `127.0.0.1:7001` */
  readonly node: string;
  constructor(node: string, message: string, options?: { cause?: unknown }, code = 'NODE_ERROR') {
    super(code, `${node}: ${message}`, options);
    this.node = node;
  }
}

/** A node's request did not answer within `nodeTimeout`. */
export class NodeTimeoutError extends NodeError {
  constructor(node: string, timeout: number) {
    super(node, `no answer within ${timeout} ms (node down, hung or unreachable)`, undefined, 'NODE_TIMEOUT');
  }
}

/** `node: message`, without naming the node twice when the message already starts with it. */
export function nodeMessage(f: NodeFailure): string {
  return f.error.message.startsWith(`${f.node}: `) ? f.error.message : `${f.node}: ${f.error.message}`;
}

/** `resource "a"` or `resources ["a", "b"]`, for messages; long names are cut. */
export function describe(resources: readonly string[]): string {
  const text = resources.map((r) => JSON.stringify(r.length > 80 ? `${r.slice(0, 77)}...` : r)).join(', ');
  return resources.length === 1 ? `resource ${text}` : `resources [${text}]`;
}
