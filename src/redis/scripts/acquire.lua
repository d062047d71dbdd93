-- Acquire one or more lock keys on this node, all or nothing, in queue order.
--
-- Three ways through, cheapest first:
--   cheap   one key, nobody queued for it, no 0.1 counter to fold: SET NX PX is the whole check, then the
--           fence. A free key with no queue is free for anyone: while someone waits, a release never leaves
--           the key free, it hands it to the first waiter (release.lua, _handover.lua). A key left free with
--           waiters queued (its holder crashed and the key expired) has a queue, so it takes the full path,
--           where the first waiter in line goes first.
--   handed  a key already holding our token: a release handed it to us (or it is our own earlier attempt
--           of this same acquire, a reply that arrived too late). It is ours whatever the queue says; this
--           attempt confirms it (our ttl from now, a new fence) and the caller dates its validity from the
--           moment it sent this request, never from the notification.
--   full    everything else: who holds it, who is first in line, and a place in the queue when we must wait.
-- KEYS[1..n]      lock keys (<prefix>{<resource>}:lock), in the caller's (sorted) order
-- KEYS[n+1]       this node's marker (see _node-state.lua)
-- Each resource's other keys are named after its lock key (src/redis/keys.ts), so they share its hash slot and
-- need not travel with every call (each argument costs the client and the server):
--   <base>:fence   fencelock 0.1's per-resource counter (folded in, see _node-state.lua)
--   <base>:queue   the wait queue (sorted set: member = owner token, score = ticket)
--   <base>:leases  the queue's leases (sorted set: member = owner token, score = lease end, ms)
-- ARGV[1] owner token   ARGV[2] ttl ms
-- The rest is optional, and a missing argument takes the default in brackets: the common request (a first
-- attempt, counters that agree, no quarantine) is the two above alone, since every argument costs the client
-- and the server (src/redis/redlock.ts acquireArgs).
-- ARGV[3] the highest fence the client has seen on any of its nodes ['' = none]: the counter is raised to
--         it first, so the nodes of one round issue the same fence and none needs a write-back afterwards
-- ARGV[4] '1' = report the marker's age even when the node is trusted (restart quarantine) ['0']
-- ARGV[5] ticket: this waiter's place (arrival time) ['' = do not queue: one attempt]
-- ARGV[6] queue lease ms   ARGV[7] '1' = fair: a queued waiter ahead of us takes precedence ['1'];
--         'w' = a waiter that does not queue (fair: false): when the lock is held, <base>:watch (expiring after
--         the queue lease) asks the release to announce it ('*'), since the release only reads the queue otherwise
-- The lock keys are KEYS[1..n], n = #KEYS - 1. A node with no marker (new, or it lost its data) takes the
-- token's last 16 characters (random) as its new epoch.
-- Returns one string of space-separated fields (one bulk reply is cheaper to send and parse than an array):
--   '1 fence epoch age trusted longest' when acquired (marker age ms, node trusted 1/0, longest ttl ms);
--   '0 held epoch age trusted longest ahead counter' when not: the longest remaining ms of the keys held by
--   others (-1: no expiry, 0: free), 1 if another waiter is ahead of us in a queue, and the node's fence
--   counter (when ARGV[3] or a ticket is given, else 0).
local n = #KEYS - 1
local token, ttl, marker = ARGV[1], ARGV[2], KEYS[n + 1]

-- The cheap path (see above) comes first, before the shared functions below are built: four calls (EXISTS,
-- SET, the marker's HMGET, HINCRBY) and nothing else to allocate. Every call of this script pays for what is
-- built before its path returns, and with several nodes sharing a machine's cores, so does the lock's latency
-- (docs/benchmarks.md, "The scripts' common paths"). SET NX never overwrites a key of another type (the full
-- path's GET then fails with WRONGTYPE). One EXISTS checks both the queue and fencelock 0.1's counter.
local cheap = false
if n == 1 then
  local b = string.sub(KEYS[1], 1, -6)
  if redis.call('EXISTS', b .. ':queue', b .. ':fence') == 0 and redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
    -- The usual node (trusted, its marker's ttl already this long) and request (no hint, no age asked for):
    -- the reply grant_reply would give, built here. Anything else: grant_reply below.
    if (ARGV[3] or '') == '' and ARGV[4] ~= '1' then
      local m = redis.call('HMGET', marker, 'epoch', 'trusted', 'ttl')
      if m[1] and m[2] == '1' and m[3] and tonumber(ttl) <= tonumber(m[3]) then
        local f = redis.call('HINCRBY', marker, 'fence', 1)
        -- HINCRBY's reply is exact below 2^53; past that, the field is read back as text (as next_fence does).
        local fence = f < 9007199254740992 and string.format('%.0f', f) or redis.call('HGET', marker, 'fence')
        return '1 ' .. fence .. ' ' .. m[1] .. ' -1 1 ' .. m[3]
      end
    end
    cheap = true
  end
end

-- #include _node-state.lua
local hint, want_age = ARGV[3] or '', ARGV[4] == '1'
local ticket, fair = ARGV[5] or '', (ARGV[7] or '1') == '1'
if cheap then return grant_reply(marker, ttl, string.sub(token, -16), want_age, hint) end
-- #include _place.lua

-- Each resource's key name without ':lock': its other keys are this plus a suffix, built only when used.
local base = {}
for i = 1, n do base[i] = string.sub(KEYS[i], 1, -6) end
local epoch, age, trusted, longest = node_state(marker, ttl, string.sub(token, -16), want_age)

-- GET (not EXISTS) so that a key of another type fails with WRONGTYPE instead
-- of being treated as a lock: we never touch data we did not write.
-- A key that already holds our token is our own earlier attempt of this same
-- acquire (a reply that arrived too late): it counts as ours, not as a rival.
local held, held_ms, mine = false, 0, {}
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  mine[i] = current == token
  if current and current ~= token then
    held = true
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl < 0 or held_ms < 0 then held_ms = -1 elseif pttl > held_ms then held_ms = pttl end
  end
end

-- The first live waiter of queue i: {token, ticket} or {}. Waiters whose lease
-- ran out (a crashed process) are dropped here, so they block nobody for long.
local function head(i)
  local q, l = base[i] .. ':queue', base[i] .. ':leases'
  local h = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
  if #h == 0 or h[1] == token then return h end
  local dead = redis.call('ZRANGEBYSCORE', l, '-inf', clock(), 'LIMIT', 0, 100)
  if #dead == 0 then return h end
  redis.call('ZREM', q, unpack(dead))
  redis.call('ZREM', l, unpack(dead))
  return redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
end

-- Fair: a free lock still goes to the first waiter in line, not to whoever asks first.
local ahead, queued = false, false
if fair then
  for i = 1, n do
    -- While the lock is held, a dead head need not be looked for yet: our turn cannot come now anyway.
    -- A key handed to us is ours whoever is queued (the release chose us): no head to look for.
    local h = mine[i] and {} or held and redis.call('ZRANGE', base[i] .. ':queue', 0, 0, 'WITHSCORES') or head(i)
    if mine[i] then
      queued = true
    elseif h[1] == token then
      queued = true
    elseif h[1] then
      -- Another waiter is first, unless our own ticket is earlier (we have not been queued here yet).
      local theirs, ours = tonumber(h[2]), tonumber(ticket)
      if not ours or theirs < ours or (theirs == ours and h[1] < token) then ahead = true end
    end
  end
end

if held or ahead then
  if fair and ticket ~= '' then
    local lease_end = clock() + tonumber(ARGV[6])
    for i = 1, n do take_place(base[i], token, ticket, lease_end, ARGV[6]) end
  elseif ARGV[7] == 'w' then
    for i = 1, n do redis.call('SET', base[i] .. ':watch', '1', 'PX', ARGV[6]) end
  end
  -- A queued waiter always gets the counter: a grant whose fence is above it came after this request
  -- (handed-grant.ts).
  local counter = (hint ~= '' or ticket ~= '') and (redis.call('HGET', marker, 'fence') or '0') or '0'
  return busy_reply(held_ms, epoch, age, trusted, longest, ahead, counter)
end

-- One counter for every resource: the fence exceeds every earlier fence of each of them.
for i = 1, n do fold_legacy(marker, base[i] .. ':fence') end
if hint ~= '' then raise_counter(marker, hint) end
local fence = next_fence(marker)
for i = 1, n do redis.call('SET', KEYS[i], token, 'PX', ttl) end
-- Our turn has come: leave the queue.
if queued then
  for i = 1, n do
    redis.call('ZREM', base[i] .. ':queue', token)
    redis.call('ZREM', base[i] .. ':leases', token)
  end
end
-- Concatenated by hand from strings: table.concat, and every Lua number turned into text, cost more.
return '1 ' .. fence .. ' ' .. epoch .. ' ' .. age .. ' ' .. trusted .. ' ' .. longest
