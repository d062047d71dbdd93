-- Compare-and-delete: remove each lock key only if it still holds our token,
-- and hand the resource to the first waiter in its queue.
-- KEYS[1..n] lock keys   KEYS[n+1..2n] their wait queues
-- ARGV[1] owner token   ARGV[2..n+1] release channels
-- The notification names the waiter whose turn it is and goes to its process's
-- own channel (<channel>:<first 8 characters of its token>), so only that one
-- wakes (no thundering herd, not even on the wire); '*' on the shared channel
-- when nobody is queued wakes any waiter that does not queue. A waiter that crashed at the head of the queue is skipped by the
-- next acquire after its lease runs out (acquire.lua).
-- Returns how many keys were deleted.
local n = #KEYS / 2
local deleted = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    local head = redis.call('ZRANGE', KEYS[n + i], 0, 0)[1]
    if head then
      -- A mutex owner token starts with its manager's 8-character id: only that process is told.
      redis.call('PUBLISH', ARGV[i + 1] .. ':' .. string.sub(head, 1, 8), head)
    else
      redis.call('PUBLISH', ARGV[i + 1], '*')
    end
    deleted = deleted + 1
  end
end
return deleted
