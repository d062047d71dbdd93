-- Compare-and-delete: remove each lock key only if it still holds our token,
-- and hand the resource to the first waiter in its queue.
-- KEYS[1..n] lock keys (<prefix>{<resource>}:lock); each one's queue (<base>:queue) and release channel
-- (<base>:released) are named after it (src/redis/keys.ts) and share its hash slot.
-- ARGV[1] owner token
-- The notification names the waiter whose turn it is and goes to its process's
-- own channel (<channel>:<first 8 characters of its token>), so only that one
-- wakes (no thundering herd, not even on the wire); '*' on the shared channel
-- when nobody is queued wakes any waiter that does not queue. A waiter that crashed at the head of the queue is skipped by the
-- next acquire after its lease runs out (acquire.lua).
-- Returns how many keys were deleted.
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    local base = string.sub(KEYS[i], 1, -6) -- without ':lock'
    local head = redis.call('ZRANGE', base .. ':queue', 0, 0)[1]
    if head then
      -- A mutex owner token starts with its manager's 8-character id: only that process is told.
      redis.call('PUBLISH', base .. ':released:' .. string.sub(head, 1, 8), head)
    else
      redis.call('PUBLISH', base .. ':released', '*')
    end
    deleted = deleted + 1
  end
end
return deleted
