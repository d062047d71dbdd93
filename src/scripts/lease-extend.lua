-- Compare-and-extend one hold of a semaphore or read-write lock: a member of a lease sorted set
-- (a permit, a reader) or a string key that holds our token (a writer).
-- KEYS[1] the lease key   KEYS[2] this node's epoch marker
-- ARGV[1] 'zset' or 'string'   ARGV[2] member (zset) or owner token (string)   ARGV[3] ttl ms
-- Returns {1 if the hold is ours and now lasts ttl ms from now, else 0; this node's epoch or false}.
-- A hold that is gone stays gone (no write-back on a node that lost its data, unlike extend.lua).
local epoch = redis.call('HGET', KEYS[2], 'epoch')
if ARGV[1] == 'string' then
  if redis.call('GET', KEYS[1]) ~= ARGV[2] then return {0, epoch} end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, epoch}
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local lease_end = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
-- A lease that already ended may have let someone else in: it is not ours to extend.
if not lease_end or lease_end <= now_ms then return {0, epoch} end
redis.call('ZADD', KEYS[1], 'XX', now_ms + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {1, epoch}
