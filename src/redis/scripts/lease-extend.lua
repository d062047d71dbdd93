-- Compare-and-extend one hold of a semaphore or read-write lock: a member of a lease sorted set
-- (a permit '<slot>:<token>', or a reader's token) or a string key that holds our token (a writer).
-- KEYS[1] the lease key   KEYS[2] this node's epoch marker
-- KEYS[3] (readers only) the writer key: a reader is never written back next to a writer
-- ARGV[1] 'zset' or 'string'   ARGV[2] member (zset) or owner token (string)   ARGV[3] ttl ms
-- ARGV[4] the epoch this node had when the hold was taken ('' if unknown)
-- Returns {1 if the hold is ours and now lasts ttl ms from now, else 0; this node's epoch or false}.
--
-- A hold that is gone is normally lost. The one exception, as in extend.lua: the node lost all its data
-- (its epoch is not the one the hold was taken under), so nobody removed the hold on purpose. Then it is
-- written back, unless that would break the primitive's rule on this node: a permit's slot taken by
-- another live holder, a reader next to a writer, a writer's key taken by someone else.
local m = redis.call('HMGET', KEYS[2], 'epoch', 'ttl')
local epoch = m[1]
-- The longest lease asked for on this node bounds the restart quarantine (see _node-state.lua).
if tonumber(ARGV[3]) > (tonumber(m[2]) or 0) then redis.call('HSET', KEYS[2], 'ttl', ARGV[3]) end
local node_was_reset = ARGV[4] ~= '' and epoch ~= ARGV[4]
if ARGV[1] == 'string' then
  local current = redis.call('GET', KEYS[1])
  if current == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return {1, epoch}
  end
  if not current and node_was_reset then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return {1, epoch}
  end
  return {0, epoch}
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local lease_end = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if not lease_end then
  if not node_was_reset then return {0, epoch} end
  if KEYS[3] and redis.call('GET', KEYS[3]) then return {0, epoch} end
  local slot = string.match(ARGV[2], '^(%d+):')
  if slot then
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now_ms, '+inf')) do
      if string.match(member, '^(%d+):') == slot then return {0, epoch} end
    end
  end
elseif lease_end <= now_ms then
  -- A lease that already ended may have let someone else in: it is not ours to extend.
  return {0, epoch}
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {1, epoch}
