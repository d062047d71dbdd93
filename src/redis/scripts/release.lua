-- Compare-and-delete, with the hand-over inside the release: each lock key that still holds our token
-- goes to the first live waiter in its queue (_handover.lua), or, when nobody waits, is deleted.
-- KEYS[1..n] lock keys (<prefix>{<resource>}:lock); each one's queue (<base>:queue), its leases
-- (<base>:leases) and release channel (<base>:released) are named after it (src/redis/keys.ts) and
-- share its hash slot.
-- ARGV[1] owner token
-- ARGV[2] (optional, one lock key) the fence hint: the counter is raised to it before a fence is issued to
--         whoever the lock goes to ('' = none); the releaser's fence, so that every node of one hand-over
--         issues the same fence. Given, KEYS[2] is this node's marker, and a waiter queued here is granted
--         the lock (_handover.lua; a missing marker takes the waiter's token's last 16 characters as its epoch,
--         as in acquire.lua).
-- ARGV[3..6] (optional, with ARGV[2]) the releasing process's next caller for this resource, not yet in the
--            nodes' queue (local-queue.ts): its token, its ticket (arrival), its ttl ms, '1' = report the
--            marker's age. It gets the lock when it arrived before every live waiter in the queue, and the
--            release grants it there and then, as acquire.lua's cheap path would: its ttl, a new fence. Its
--            caller dates the lease from the moment it sent this release, which came before the grant (redlock.ts).
-- ARGV[7] (optional, with ARGV[3..6]) the successor's queue lease ms: when a live waiter arrived before it, the
--         release takes the successor's place in the queue for it (its ticket, as acquire.lua's busy path would),
--         and replies as acquire.lua does to a queued attempt: '0 held epoch age trusted longest 1 counter', the
--         counter read after the hand-over, so that a grant the successor is handed later has a fence above it
--         (handed-grant.ts). Its caller then waits for its turn without a round of its own. Without ARGV[7]
--         (an older fencelock), the successor makes that round itself.
-- Nobody waiting (no queue, no <base>:watch, no successor) is the common case, and there the release is a
-- compare-and-delete plus one EXISTS: no queue to read, nothing to publish. A key deleted while waiters that do
-- not queue (fair: false) watch it (acquire.lua sets <base>:watch for them) is announced with '*' on the
-- shared channel. Returns how many keys were ours (handed over or deleted); with the successor granted,
-- acquire.lua's grant reply instead: '1 fence epoch age trusted longest'; with it queued (ARGV[7]), the busy
-- reply above.
-- The common case comes first, before the shared functions below are built (as in acquire.lua): one key,
-- no successor, and the key is not ours any more, or nobody waits for it.
if not ARGV[3] and (ARGV[2] or #KEYS == 1) then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  local base = string.sub(KEYS[1], 1, -6)
  if redis.call('EXISTS', base .. ':queue', base .. ':watch') == 0 then
    redis.call('DEL', KEYS[1])
    return 1
  end
end

-- The hand-over to the releasing process's next caller when nobody is queued (callers of one process taking
-- turns), also before the shared functions are built, as acquire.lua's cheap path: the same writes and reply as
-- the full path below (hand_over's 'successor', grant_reply) on the usual node (trusted, its marker's ttl already
-- this long, its counter at or above the hint, no 0.1 counter to fold) when no age is asked for. Anything else
-- takes the full path. Built, this release cost the server 19.8 µs a call pipelined and 45 µs live (W3's shape,
-- 16 callers of one process on one node; bench/script-cost.ts and docs/benchmarks.md).
if ARGV[3] and ARGV[3] ~= '' and #KEYS == 2 and ARGV[6] ~= '1' then
  local base = string.sub(KEYS[1], 1, -6)
  if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('EXISTS', base .. ':queue', base .. ':fence') == 0 then
    local m = redis.call('HMGET', KEYS[2], 'epoch', 'trusted', 'ttl', 'fence')
    local hint, counter = ARGV[2], m[4] or '0'
    -- decimal strings: the hint is at most the counter when it is shorter, or as long and not greater
    local raised = #hint > #counter or (#hint == #counter and hint > counter)
    if m[1] and m[2] == '1' and m[3] and tonumber(ARGV[5]) <= tonumber(m[3]) and not raised then
      redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[5])
      local f = redis.call('HINCRBY', KEYS[2], 'fence', 1)
      local fence = f < 9007199254740992 and string.format('%.0f', f) or redis.call('HGET', KEYS[2], 'fence')
      return '1 ' .. fence .. ' ' .. m[1] .. ' -1 1 ' .. m[3]
    end
  end
end

-- #include _handover.lua
-- #include _place.lua
-- The releasing process's next caller `successor` (see hand_over), when a waiter queued at `key` arrived before
-- it: its place in the queue (its `ticket`, a lease of `lease_ms`), taken by the release as acquire.lua's busy
-- path would have taken it, and acquire.lua's reply to a queued attempt, with the node's counter as it is
-- after the hand-over. `ttl_ms` is recorded as any request's ttl is (restart quarantine).
local function queue_successor(key, marker, successor, ticket, ttl_ms, want_age, lease_ms)
  take_place(string.sub(key, 1, -6), successor, ticket, clock() + tonumber(lease_ms), lease_ms)
  local epoch, age, trusted, longest = node_state(marker, ttl_ms, string.sub(successor, -16), want_age)
  local counter = redis.call('HGET', marker, 'fence') or '0'
  return busy_reply(redis.call('PTTL', key), epoch, age, trusted, longest, true, counter)
end

local hint, successor = ARGV[2], ARGV[3]
local marker = hint and KEYS[2]
local n = hint and 1 or #KEYS
local released = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    local base = string.sub(KEYS[i], 1, -6)
    local waiting = redis.call('EXISTS', base .. ':queue', base .. ':watch') > 0
    local handed = (waiting or successor) and hand_over(KEYS[i], marker, hint or '', successor, ARGV[4], ARGV[5])
    if handed == 'successor' then
      fold_legacy(marker, base .. ':fence')
      return grant_reply(marker, ARGV[5], string.sub(successor, -16), ARGV[6] == '1', hint)
    end
    if handed == 'head' and successor and ARGV[7] then
      return queue_successor(KEYS[i], marker, successor, ARGV[4], ARGV[5], ARGV[6] == '1', ARGV[7])
    end
    if not handed then
      redis.call('DEL', KEYS[i])
      if waiting then redis.call('PUBLISH', base .. ':released', '*') end
    end
    released = released + 1
  end
end
return released
