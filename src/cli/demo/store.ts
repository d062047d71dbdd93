import type { Redis } from 'ioredis';

/**
 * The protected store: one hash per SKU on a storage node that is not a lock
 * node. A write carries the writer's fence and is accepted only when that
 * fence is greater than the last accepted one, checked in the same atomic
 * step as the write. This is what turns away a writer whose lock expired
 * while it was paused.
 */
const FENCED_WRITE = `
local last = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(ARGV[2]) <= last then
  redis.call('HINCRBY', KEYS[1], 'rejected', 1)
  return 0
end
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'fence', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'accepted', 1)
return 1`;

export interface StockState {
  readonly stock: number;
  readonly fence: bigint;
  readonly accepted: number;
  readonly rejected: number;
}

export class FencedStock {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
  ) {}

  async init(stock: number): Promise<void> {
    await this.redis.del(this.key);
    await this.redis.hset(this.key, 'stock', stock, 'fence', 0, 'accepted', 0, 'rejected', 0);
  }

  async read(): Promise<number> {
    return Number(await this.redis.hget(this.key, 'stock'));
  }

  /** true when the store accepted the write, false when it rejected a stale fence. */
  async write(stock: number, fence: bigint): Promise<boolean> {
    return (await this.redis.eval(FENCED_WRITE, 1, this.key, stock, fence.toString())) === 1;
  }

  async state(): Promise<StockState> {
    const h = await this.redis.hgetall(this.key);
    return { stock: Number(h.stock), fence: BigInt(h.fence ?? '0'), accepted: Number(h.accepted), rejected: Number(h.rejected) };
  }
}
