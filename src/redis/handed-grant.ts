// The grant a release hands to a waiter of another process, taken up without a round of its own.
//
// A release that finds a waiter queued gives it the lock there and then (_handover.lua): the key with the
// waiter's token and, as its lease, what is left of the waiter's place in line, a new fence, and a message on
// the waiter's manager's channel that carries the grant as acquire.lua would have replied it. The waiter may
// count the lease only from a moment it knows came before that grant, and a notification cannot say when it
// was written. The rule used here:
//
//   every queued attempt's reply reports the node's fence counter C at the moment the node ran it;
//   a grant whose fence F > C (same epoch: the same counter) was issued after that attempt ran,
//   so after the attempt was sent; the place that attempt renewed lasts the queue lease from then,
//   and the handed key at least as long. So the lease counts from that send time, for the queue lease
//   (only a waiter whose ttl is at least that takes a grant up so: wait.ts), and the lock extends it to
//   its ttl at once (Lock.topUp).
//
// The grants so dated count as an acquire round's grants would (redlock.ts decide: trust, quarantine, the
// quorum, the fence); a node that has not named us yet (its message is on its way, or its release failed)
// counts as it answered our last attempt, busy. Anything that cannot be dated (a node that named us with the
// token alone: an older release, or dequeue.lua; a grant not above the counter we saw; a node we have no
// queued reply from) leaves the waiter to confirm with an attempt, as before.
import type { AcquireReply } from './replies.js';

type Held = Extract<AcquireReply, { kind: 'held' }>;

/** Per node, the waiter's latest queued attempt that the node answered "held": when it was sent, and the reply. */
export class BusyMarks {
  /** monotonic send time of that attempt, per node (undefined: none yet) */
  private readonly sent: Array<number | undefined> = [];
  private readonly replies: Held[] = [];

  /** Node i answered "held" to the attempt sent at `sent` (a queued one: its reply carries the counter). */
  note(i: number, sent: number, reply: Held): void {
    // Attempts go one after the other, so a later note is a later attempt: always the tighter date.
    this.sent[i] = sent;
    this.replies[i] = reply;
  }

  /**
   * The round that `grants` (parsed from the nodes' messages, undefined where a node has not named us)
   * amount to: each grant dated from the send time of the attempt it came after, the round from the
   * earliest of them, and the nodes without a grant as they answered that attempt. Undefined when some
   * grant cannot be dated, some node has neither, or fewer than `quorum` grants are dated.
   */
  roundOf(
    grants: ReadonlyArray<AcquireReply | undefined>,
    nodes: number,
    quorum: number,
  ): { start: number; replies: AcquireReply[] } | undefined {
    let start = Infinity;
    let dated = 0;
    const replies: AcquireReply[] = [];
    for (let i = 0; i < nodes; i++) {
      const grant = grants[i];
      const sent = this.sent[i];
      const held = this.replies[i];
      // Trust as it was when each reply was read: only a node trusted then and now is judged from these replies
      // (a node seen untrusted beside a trusted one counts as having lost its data, so a stale flag taken
      // while a new deployment still bootstraps would quarantine it). Anything else is left to an attempt.
      if (sent === undefined || held === undefined || !held.trusted) return undefined;
      if (grant === undefined) {
        replies.push(held);
        continue;
      }
      if (grant.kind !== 'granted' || !grant.trusted || grant.epoch !== held.epoch || grant.fence <= held.counter) return undefined;
      if (sent < start) start = sent;
      dated++;
      replies.push(grant);
    }
    // Fewer than a quorum: the attempt that follows takes these keys as ours together with the rest. Judged as a
    // round, they would be given back (a round short of a quorum releases what it won), and handed on.
    return dated < quorum ? undefined : { start, replies };
  }
}
