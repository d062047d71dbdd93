-- Compare-and-delete, with the hand-over inside the release: each lock key that still holds our token
-- goes to the first live waiter in its queue (_handover.lua), or, when nobody waits, is deleted.
-- KEYS[1..n] lock keys (<prefix>{<resource>}:lock); each one's queue (<base>:queue), its leases
-- (<base>:leases) and release channel (<base>:released) are named after it (src/redis/keys.ts) and
-- share its hash slot.
-- ARGV[1] owner token
-- ARGV[2..4] (optional) the releasing process's next caller for this one resource, not yet in the nodes'
--            queue (local-queue.ts): its token, its ticket (arrival) and how long to keep the lock for it.
--            It gets the lock when it arrived before every live waiter in the queue.
-- Nobody waiting (no queue, no <base>:watch, no successor) is the common case, and there the release is a
-- compare-and-delete plus one EXISTS: no queue to read, nothing to publish. A key deleted while waiters that do
-- not queue (fair: false) watch it (acquire.lua sets <base>:watch for them) is announced with '*' on the
-- shared channel. Returns how many keys were ours (handed over or deleted).
-- #include _handover.lua
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    local base = string.sub(KEYS[i], 1, -6)
    local waiting = redis.call('EXISTS', base .. ':queue', base .. ':watch') > 0
    if not ((waiting or (ARGV[2] and ARGV[2] ~= '')) and hand_over(KEYS[i], ARGV[2], ARGV[3], ARGV[4])) then
      redis.call('DEL', KEYS[i])
      if waiting then redis.call('PUBLISH', base .. ':released', '*') end
    end
    released = released + 1
  end
end
return released
