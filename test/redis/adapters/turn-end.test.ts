// One end of turn for every node and layer (src/redis/adapters/turn-end.ts): each piece of work asked for in a
// turn runs once, after the code that asked, in the order asked, from one process.nextTick; work asked for
// while the turn ends gets a turn end of its own.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atTurnEnd, type TurnEnd } from '../../../src/redis/adapters/turn-end.js';

/** Resolves once the nextTick queue has run (a setImmediate comes after every tick and promise reaction of this turn). */
const afterTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('atTurnEnd', () => {
  test('each work ends its turn once, after the code that asked, in the order asked, from one nextTick', async () => {
    const ran: string[] = [];
    const work = (name: string): TurnEnd => ({ endTurn: () => void ran.push(name) });
    const [a, b] = [work('a'), work('b')];
    const original = process.nextTick;
    let ticks = 0;
    process.nextTick = ((...args: Parameters<typeof process.nextTick>) => {
      ticks++;
      original(...args);
    }) as typeof process.nextTick;
    try {
      atTurnEnd(a);
      atTurnEnd(b);
    } finally {
      process.nextTick = original;
    }
    assert.deepEqual(ran, [], 'nothing runs before the code that asked returns');
    await afterTurn();
    assert.deepEqual(ran, ['a', 'b']);
    assert.equal(ticks, 1, 'one nextTick for the turn, however many asked');
  });

  test('work asked for while the turn ends runs at a turn end of its own, and a later turn starts afresh', async () => {
    const ran: string[] = [];
    const late: TurnEnd = { endTurn: () => void ran.push('late') };
    const first: TurnEnd = {
      endTurn: () => {
        ran.push('first');
        atTurnEnd(late); // a batch sent to a driver whose turn had ended
      },
    };
    const second: TurnEnd = { endTurn: () => void ran.push('second') };
    atTurnEnd(first);
    atTurnEnd(second);
    await afterTurn();
    assert.deepEqual(ran, ['first', 'second', 'late'], 'the late one after every work of the ending turn');
    atTurnEnd(first);
    await afterTurn();
    assert.deepEqual(ran, ['first', 'second', 'late', 'first', 'late'], 'the next turn asks anew');
    await afterTurn();
    assert.equal(ran.length, 5, 'nothing runs twice');
  });
});
