/**
 * Work that waits for the end of the current turn of the event loop: the requests every caller makes in one
 * turn are known by then (batch.ts sends what it held back, ioredis.ts lets its socket's cork go). One
 * process.nextTick serves every node and layer that has such work in a turn, instead of one each: an acquire
 * round on five nodes, through the batching layer and the ioredis driver, used to schedule ten.
 *
 * They run in the order they first asked in the turn: a layer that asks before handing its first request to
 * the layer below (batch.ts before the driver) ends its turn first, while the socket's cork is still on.
 */
export interface TurnEnd {
  endTurn(): void;
}

let due: TurnEnd[] = [];

function endTurn(): void {
  const ending = due;
  // Work asked for while these run (a batch sent to a driver whose turn already ended) gets a turn end of its own.
  due = [];
  for (const work of ending) work.endTurn();
}

/**
 * Calls `work.endTurn()` at the next process.nextTick: once the code running now has returned (asked from a
 * promise reaction, such as a reply's, once the reactions queued with it have run too).
 */
export function atTurnEnd(work: TurnEnd): void {
  if (due.length === 0) process.nextTick(endTurn);
  due.push(work);
}
