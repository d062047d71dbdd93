-- Leave the wait queues: a waiter that gives up (timeout, abort), or one that got the lock on a quorum and
-- was still queued on other nodes. A free lock whose first waiter we were wakes the next waiter instead
-- of letting it sleep.
-- KEYS[1..n] lock keys   KEYS[n+1..2n] wait queues   KEYS[2n+1..3n] their leases
-- ARGV[1] owner token   ARGV[2..n+1] release channels
-- ARGV[n+2] '1' = giving up: a lock handed to us meanwhile (release.lua) goes on to the next live waiter,
--           or is deleted. Otherwise (we hold the lock) such a key is ours and stays.
-- Returns how many queues we were in (a lock handed to us counts as one).
-- #include _handover.lua
local n = #KEYS / 3
local giving_up = ARGV[n + 2] == '1'
local left = 0
for i = 1, n do
  local q = KEYS[n + i]
  local was_first = redis.call('ZRANGE', q, 0, 0)[1] == ARGV[1]
  local current = redis.call('GET', KEYS[i])
  if current == ARGV[1] and giving_up then
    -- Handed to us after we gave up: pass it on, as a release would.
    left = left + 1
    redis.call('ZREM', q, ARGV[1])
    redis.call('ZREM', KEYS[2 * n + i], ARGV[1])
    if not hand_over(KEYS[i]) then
      redis.call('DEL', KEYS[i])
      redis.call('PUBLISH', ARGV[i + 1], '*')
    end
  elseif redis.call('ZREM', q, ARGV[1]) == 1 then
    left = left + 1
    redis.call('ZREM', KEYS[2 * n + i], ARGV[1])
    if was_first and not current then
      local head = redis.call('ZRANGE', q, 0, 0)[1]
      if head then redis.call('PUBLISH', ARGV[i + 1] .. ':' .. string.sub(head, 1, 8), head) end
    end
  end
end
return left
