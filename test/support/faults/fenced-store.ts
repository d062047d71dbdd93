// The protected resource of the reliability suite: a register on a storage
// Redis node (never a lock node) that accepts a write only with a fence greater
// than the last accepted one, and logs every attempt for the history checker.
import { Redis } from 'ioredis';
import type { StoreWrite } from './history.js';

// Fences are compared as canonical decimal strings (longer is larger, then
// lexicographic): Lua numbers are doubles and would round fences past 2^53.
// Check, write and log are one script, so the log order is the order applied.
const FENCED_WRITE = `
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local last = redis.call('HGET', KEYS[1], 'fence') or '0'
local ok = greater(ARGV[2], last)
if ok then redis.call('HSET', KEYS[1], 'value', ARGV[1], 'fence', ARGV[2]) end
redis.call('RPUSH', KEYS[2], ARGV[2] .. ' ' .. (ok and '1' or '0') .. ' ' .. ARGV[3])
return ok and 1 or 0`;

const CANONICAL = /^(0|[1-9][0-9]*)$/;

/** What defineCommand adds to the client. */
interface WithFencedWrite {
  fencedWrite(data: string, log: string, value: string, fence: string, at: string): Promise<number>;
}

export interface StoredValue {
  readonly value: string | null;
  /** the last accepted fence, '0' before any */
  readonly fence: string;
}

export class FencedStore {
  readonly #redis: Redis;
  readonly #owned: boolean;

  /** `redis`: a client of the storage node; the store closes it only if it made it (from a URL). */
  constructor(
    redis: Redis | string,
    readonly prefix = 'faults:store:',
  ) {
    // A bounded command time: a storage node behind a faulty proxy must fail a write, not hang it.
    this.#owned = typeof redis === 'string';
    this.#redis = typeof redis === 'string' ? new Redis(redis, { maxRetriesPerRequest: 1, commandTimeout: 2_000 }) : redis;
    if (this.#owned) this.#redis.on('error', () => undefined);
    this.#redis.defineCommand('fencedWrite', { numberOfKeys: 2, lua: FENCED_WRITE });
  }

  // Hash tag: the register and its log share a slot, so the script would also run on a cluster.
  #keys(key: string): [string, string] {
    return [`${this.prefix}{${key}}:data`, `${this.prefix}{${key}}:log`];
  }

  async read(key: string): Promise<StoredValue> {
    const [value, fence] = await this.#redis.hmget(this.#keys(key)[0], 'value', 'fence');
    return { value: value ?? null, fence: fence ?? '0' };
  }

  /** true: accepted; false: rejected as stale. `at` (ns, process.hrtime.bigint()) goes into the log, default now. */
  async write(key: string, value: string | number, fence: bigint | string, at: bigint = process.hrtime.bigint()): Promise<boolean> {
    const f = fence.toString();
    if (!CANONICAL.test(f)) throw new RangeError(`fence must be a non-negative integer, got ${f}`);
    const [data, log] = this.#keys(key);
    return (await (this.#redis as unknown as WithFencedWrite).fencedWrite(data, log, String(value), f, at.toString())) === 1;
  }

  /** Every write attempted on `key`, in the order the store applied them. */
  async log(key: string): Promise<StoreWrite[]> {
    const lines = await this.#redis.lrange(this.#keys(key)[1], 0, -1);
    return lines.map((line) => {
      const [fence = '', accepted, at = ''] = line.split(' ');
      return { fence, accepted: accepted === '1', at: BigInt(at) };
    });
  }

  /** Forget `key` and its log. */
  async clear(key: string): Promise<void> {
    await this.#redis.del(...this.#keys(key));
  }

  close(): void {
    if (this.#owned) this.#redis.disconnect();
  }
}
