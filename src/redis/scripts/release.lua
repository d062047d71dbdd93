-- Compare-and-delete, with the hand-over inside the release: each lock key that still holds our token
-- goes to the first live waiter in its queue (_handover.lua), or, when nobody waits, is deleted.
-- KEYS[1..n] lock keys (<prefix>{<resource>}:lock); each one's queue (<base>:queue), its leases
-- (<base>:leases) and release channel (<base>:released) are named after it (src/redis/keys.ts) and
-- share its hash slot.
-- ARGV[1] owner token
-- ARGV[2..6] (optional, one lock key) the releasing process's next caller for this resource, not yet in the
--            nodes' queue (local-queue.ts): its token, its ticket (arrival), its ttl ms, then as acquire.lua's
--            ARGV[3] and ARGV[4]: the fence hint, '1' = report the marker's age. KEYS[2] is then this node's
--            marker (a missing one takes the caller's token's last 16 characters as its epoch, as in acquire.lua).
--            It gets the lock when it arrived before every live waiter in the queue, and the release grants it
--            there and then, as acquire.lua's cheap path would: its ttl, a new fence. Its caller dates the
--            lease from the moment it sent this release, which came before the grant (redlock.ts).
-- Nobody waiting (no queue, no <base>:watch, no successor) is the common case, and there the release is a
-- compare-and-delete plus one EXISTS: no queue to read, nothing to publish. A key deleted while waiters that do
-- not queue (fair: false) watch it (acquire.lua sets <base>:watch for them) is announced with '*' on the
-- shared channel. Returns how many keys were ours (handed over or deleted); with the successor granted,
-- acquire.lua's grant reply instead: '1 fence epoch age trusted longest'.
-- #include _handover.lua
-- #include _node-state.lua
local successor = ARGV[2]
local n = successor and 1 or #KEYS
local released = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    local base = string.sub(KEYS[i], 1, -6)
    local waiting = redis.call('EXISTS', base .. ':queue', base .. ':watch') > 0
    local handed = (waiting or successor) and hand_over(KEYS[i], successor, ARGV[3], ARGV[4])
    if handed == 'successor' then
      fold_legacy(KEYS[2], base .. ':fence')
      return grant_reply(KEYS[2], ARGV[4], string.sub(successor, -16), ARGV[6] == '1', ARGV[5])
    end
    if not handed then
      redis.call('DEL', KEYS[i])
      if waiting then redis.call('PUBLISH', base .. ':released', '*') end
    end
    released = released + 1
  end
end
return released
