-- Compare-and-delete one hold of a semaphore or read-write lock, and wake the waiters.
-- KEYS[1] the lease key   KEYS[2] (optional) write-intent set to leave as well (a writer's release)
-- ARGV[1] 'zset' (exact member), 'permit' (any slot's member '<slot>:<token>') or 'string' (key holding the token)
-- ARGV[2] member or owner token   ARGV[3] release channel
-- Withdrawing a waiting writer's intent is the release of a 'zset' member of the intent set.
-- Never touches another owner's hold. Returns 1 when our hold was removed, else 0.
local removed = 0
if ARGV[1] == 'string' then
  if redis.call('GET', KEYS[1]) == ARGV[2] then removed = redis.call('DEL', KEYS[1]) end
elseif ARGV[1] == 'permit' then
  local suffix = ':' .. ARGV[2]
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    if string.sub(member, -#suffix) == suffix then removed = removed + redis.call('ZREM', KEYS[1], member) end
  end
else
  removed = redis.call('ZREM', KEYS[1], ARGV[2])
end
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[2]) end
if removed > 0 then
  redis.call('PUBLISH', ARGV[3], '*')
  return 1
end
return 0
