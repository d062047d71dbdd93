-- Compare-and-delete: remove each lock key only if it still holds our token,
-- and hand the resource to the first waiter in its queue.
-- KEYS[1..n] lock keys   KEYS[n+1..2n] their wait queues
-- ARGV[1] owner token   ARGV[2..n+1] release channels
-- The notification names the waiter whose turn it is, so only that one wakes
-- (no thundering herd); '*' when nobody is queued wakes any waiter that does
-- not queue. A waiter that crashed at the head of the queue is skipped by the
-- next acquire after its lease runs out (acquire.lua).
-- Returns how many keys were deleted.
local n = #KEYS / 2
local deleted = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    local head = redis.call('ZRANGE', KEYS[n + i], 0, 0)
    redis.call('PUBLISH', ARGV[i + 1], head[1] or '*')
    deleted = deleted + 1
  end
end
return deleted
