-- Compare-and-delete, with the hand-over inside the release: each lock key that still holds our token
-- goes to the first live waiter in its queue (_handover.lua), or, when nobody waits, is deleted.
-- KEYS[1..n] lock keys (<prefix>{<resource>}:lock); each one's queue (<base>:queue), its leases
-- (<base>:leases) and release channel (<base>:released) are named after it (src/redis/keys.ts) and
-- share its hash slot.
-- ARGV[1] owner token
-- ARGV[2..4] (optional) the releasing process's next caller for this one resource, not yet in the nodes'
--            queue (local-queue.ts): its token, its ticket (arrival) and how long to keep the lock for it.
--            It gets the lock when it arrived before every live waiter in the queue.
-- A key deleted with nobody queued is announced with '*' on the shared channel: it wakes waiters that do
-- not queue (fair: false). Returns how many keys were ours (handed over or deleted).
-- #include _handover.lua
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    if not hand_over(KEYS[i], ARGV[2], ARGV[3], ARGV[4]) then
      redis.call('DEL', KEYS[i])
      redis.call('PUBLISH', string.sub(KEYS[i], 1, -6) .. ':released', '*')
    end
    released = released + 1
  end
end
return released
