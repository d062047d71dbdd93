import { randomBytes } from 'node:crypto';

/**
 * Random bytes for owner tokens, manager ids and epochs, from crypto. Drawn
 * 4 KiB at a time: one crypto call per ~150 acquires instead of two per
 * acquire (it showed in the profile of uncontended acquires). Every byte is
 * handed out once.
 */
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

export function randomSlice(n: number): Buffer {
  if (poolOffset + n > pool.length) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  poolOffset += n;
  return pool.subarray(poolOffset - n, poolOffset);
}

export const randomHex = (n: number): string => randomSlice(n).toString('hex');
