// fencelock on Redis: one node is the single-instance lock, N independent nodes are Redlock. This file wires
// the pieces together behind the Backend interface; the protocol itself is in redlock.ts (the mutex),
// quorum-round.ts (the semaphore and the read-write lock), wait.ts (waiting), admin.ts (inspect, forceRelease).
import type { Backend, BackendHost, LockInfo, Win } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { InvalidArgumentError, QuorumError } from '../errors.js';
import type { LockEvents } from '../events.js';
import type { Telemetry } from '../observability/index.js';
import type { ResolvedManagerOptions } from '../options.js';
import { toNodes, type RedisNode } from './adapters/index.js';
import { MAX_IN_FLIGHT } from './adapters/node.js';
import { Admission } from './admission.js';
import { BatchingNode } from './batch.js';
import { forceRelease, inspect } from './admin.js';
import { ReleaseNotifications } from './notifications.js';
import { waitRounds, type RoundHost } from './quorum-round.js';
import { Redlock } from './redlock.js';
import { rwKeys, rwRequest } from './rwlock.js';
import { permitRequest, semaphoreKeys } from './semaphore.js';
import { keepSubscribed, LocalQueues } from './local-queue.js';
import { acquireWaiting } from './wait.js';
import { dequeue } from './lease.js';

/**
 * Connection errors repeat on every reconnect attempt while a node is down:
 * report a new message at once, the same one at most once a second.
 */
function connectionErrorReporter(node: RedisNode, emit: (payload: LockEvents['nodeError'][0]) => void): (error: Error) => void {
  let last = '';
  let lastAt = -Infinity;
  return (error) => {
    const now = monotonicNow();
    if (error.message === last && now - lastAt < 1_000) return;
    last = error.message;
    lastAt = now;
    emit({ node: node.name, error, operation: 'connection', resources: [] });
  };
}

/** What the Redis backend reports to the manager's telemetry beyond events. */
export type RedisTelemetry = Pick<Telemetry, 'nodeQuarantined' | 'nodeRepaired' | 'watchUntrusted'>;

export class RedisBackend implements Backend {
  readonly #nodes: RedisNode[];
  readonly #redlock: Redlock;
  readonly #notifications: ReleaseNotifications;
  readonly #rounds: RoundHost;
  /** a process's mutex waiters per resource: only the head of each line goes to the nodes (local-queue.ts) */
  readonly #lines: LocalQueues;

  /** Validates the clients (InvalidArgumentError) before anything connects. */
  constructor(clients: unknown, options: ResolvedManagerOptions, host: BackendHost, telemetry: RedisTelemetry) {
    // Several standalone nodes take a turn's mutex requests in one call each (batch.ts): there the client does a
    // request's work once per node, and that is what limits a busy process. One node is left as it is: there the
    // node's own time decides, and it is better spent on requests that leave as they come (docs/benchmarks.md).
    // A Cluster's keys span slots: never batched.
    const given = toNodes(clients);
    this.#nodes = given.length > 1 ? given.map((node) => (node.isCluster ? node : new BatchingNode(node))) : given;
    if (options.waitForReplicas && this.#nodes.some((n) => !n.canWaitForReplicas))
      throw new InvalidArgumentError(
        'waitForReplicas needs to send WAIT to the master of each key: not possible through an ioredis Cluster client (use node-redis createCluster, or standalone primaries)',
      );
    const nodeError = (node: RedisNode, error: Error, operation: string, resources: readonly string[]): void =>
      host.emit('nodeError', { node: node.name, error, operation, resources });
    this.#redlock = new Redlock(this.#nodes, options, {
      nodeError,
      nodeQuarantined: (node, left) => {
        telemetry.nodeQuarantined(node.name);
        host.emit('nodeQuarantined', { node: node.name, until: Date.now() + left });
      },
      nodeRepaired: (node, countersRaised, ms) => {
        telemetry.nodeRepaired(node.name, ms);
        host.emit('nodeRepaired', { node: node.name, countersRaised, ms });
      },
    });
    const repairs = this.#redlock.repairs;
    telemetry.watchUntrusted(() => repairs.untrusted);
    this.#notifications = new ReleaseNotifications(this.#nodes, options.nodeTimeout);
    for (const node of this.#nodes) node.onConnectionError = connectionErrorReporter(node, (error) => host.emit('nodeError', error));
    this.#rounds = { redlock: this.#redlock, notifications: this.#notifications, reportNodeError: nodeError };
    const redlock = this.#redlock;
    const notifications = this.#notifications;
    // One round puts one request on each node: as many first attempts at once as a node takes requests at once.
    const nodes = this.#nodes;
    const admission = new Admission(
      MAX_IN_FLIGHT,
      (resources, o, signal, onRetry, arrival) => acquireWaiting(redlock, notifications, resources, o, signal, onRetry, arrival),
      () => nodes.some((n) => n.unresponsive),
    );
    this.#lines = new LocalQueues(
      admission.acquire,
      (resources) => keepSubscribed(redlock, notifications, resources),
      (resources, token, handed) =>
        redlock.background(
          handed.then((attempt): Promise<unknown> | undefined => {
            if (attempt?.kind === 'acquired') return redlock.release(attempt.grant);
            return attempt?.kind === 'busy' ? dequeue(redlock, resources, token, true) : undefined;
          }),
        ),
    );
    const lines = this.#lines;
    // A release grants the lock to this process's next caller when it is parked behind the holder (release.lua).
    redlock.successorFor = (resource) => lines.successor(resource, () => redlock.waiterToken(), redlock.options.nodeTimeout);
  }

  get nodeCount(): number {
    return this.#nodes.length;
  }

  get quorum(): number {
    return this.#redlock.quorum;
  }

  get roundTimeout(): number {
    return this.#redlock.options.nodeTimeout;
  }

  get lease(): Redlock {
    return this.#redlock;
  }

  acquire: Backend['acquire'] = (resources, o, signal, onRetry) => this.#lines.acquire(resources, o, signal, onRetry);

  releasedHere(resource: string): void {
    this.#lines.released(resource);
    this.#redlock.localWaiters.released(resource, this.#nodes.length);
  }

  async inspect(resource: string): Promise<LockInfo> {
    const nodes = await inspect(this.#redlock, resource);
    const votes = new Map<string, number>();
    for (const n of nodes) if (n.owner !== null) votes.set(n.owner, (votes.get(n.owner) ?? 0) + 1);
    const holder = [...votes].find(([, count]) => count >= this.quorum)?.[0] ?? null;
    const fence = nodes.reduce((max, n) => (n.fence !== null && n.fence > max ? n.fence : max), 0n);
    return { resource, quorum: this.quorum, holder, fence, nodes };
  }

  async forceRelease(resource: string): Promise<number> {
    const { deleted, failures } = await forceRelease(this.#redlock, resource);
    const answered = this.#nodes.length - failures.length;
    if (answered < this.quorum) throw new QuorumError([resource], 'forceRelease', answered, this.quorum, failures);
    return deleted;
  }

  semaphore(name: string, limit: number): Win {
    const request = permitRequest(this.#rounds, semaphoreKeys(this.#redlock.options.keyPrefix, name), limit);
    return (o, signal, onRetry) => waitRounds(this.#rounds, request, o, signal, onRetry);
  }

  readWrite(name: string, mode: 'read' | 'write'): Win {
    const request = rwRequest(this.#rounds, rwKeys(this.#redlock.options.keyPrefix, name), mode);
    return (o, signal, onRetry) => waitRounds(this.#rounds, request, o, signal, onRetry);
  }

  async close(): Promise<void> {
    // Waiters that close() interrupted leave their queues first: their places would block others until they lapse.
    // Each registers its leaving (Redlock.background) when the abort reaches it, some promise reactions after
    // close() aborted: a turn of the event loop lets every one of them get there before settle() looks.
    await new Promise((resolve) => setImmediate(resolve));
    await this.#redlock.settle();
    await this.#redlock.repairs.close();
    this.#notifications.clear();
    await Promise.all(this.#nodes.map((node) => node.close().catch(() => undefined)));
  }
}
