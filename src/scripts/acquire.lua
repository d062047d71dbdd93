-- Acquire one or more lock keys on this node, all or nothing, in queue order.
-- KEYS[1..n]      lock keys, in the caller's (sorted) order
-- KEYS[n+1..2n]   fence hashes of the same resources: n = counter, t = 1 once trustworthy
-- KEYS[2n+1..3n]  wait queues (sorted sets: member = owner token, score = ticket)
-- KEYS[3n+1..4n]  the queues' leases (sorted sets: member = owner token, score = lease end, ms)
-- KEYS[4n+1]      this node's marker: epoch, born (ms), trusted (1 once this node's data is known complete)
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] n   ARGV[4] epoch to use if the marker is missing
-- ARGV[5] ticket: '' = do not queue (one attempt), else this waiter's place (arrival time)
-- ARGV[6] queue lease ms   ARGV[7] '1' = fair: a queued waiter ahead of us takes precedence
-- ARGV[8] '1' = report the marker's age (strict restart quarantine); otherwise age is -1
-- Returns {1, fence, epoch, marker age ms, node trusted, resources trusted} when acquired,
--         {0, longest remaining ms of the keys held by others (-1: no expiry, 0: free), epoch, age,
--          node trusted, resources trusted, 1 if another waiter is ahead of us in a queue} when not.
-- Fences are returned as decimal strings: Lua numbers are doubles and would round a counter past 2^53.
local n = tonumber(ARGV[3])
local token, ticket, fair = ARGV[1], ARGV[5], ARGV[7] == '1'

-- The marker tells the client whether this node lost its data since it last
-- looked (the epoch changes), how old the data is (restart quarantine), and
-- whether its counters can be trusted (a node that lost its data cannot, see trust.ts).
-- The node's clock, read only when needed (TIME is the costliest call here on the common path).
local now_ms
local function clock()
  if not now_ms then
    local t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end

local marker = KEYS[4 * n + 1]
local m = redis.call('HMGET', marker, 'epoch', 'born', 'trusted')
local epoch, born, node_trusted = m[1], tonumber(m[2]), m[3] == '1'
if not epoch then
  epoch = ARGV[4]
  born = clock()
  redis.call('HSET', marker, 'epoch', epoch, 'born', born, 'trusted', '0')
end
local age = -1
if ARGV[8] == '1' then age = clock() - (born or clock()) end

-- A trusted node's counters are all trustworthy; only an untrusted one needs the per-resource flags.
local resources_trusted = true
if not node_trusted then
  for i = 1, n do
    if redis.call('HGET', KEYS[n + i], 't') ~= '1' then resources_trusted = false end
  end
end
local trust = {node_trusted and 1 or 0, resources_trusted and 1 or 0}

-- GET (not EXISTS) so that a key of another type fails with WRONGTYPE instead
-- of being treated as a lock: we never touch data we did not write.
-- A key that already holds our token is our own earlier attempt of this same
-- acquire (a reply that arrived too late): it counts as ours, not as a rival.
local held, held_ms = false, 0
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= token then
    held = true
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl < 0 or held_ms < 0 then held_ms = -1 elseif pttl > held_ms then held_ms = pttl end
  end
end

-- The first live waiter of queue i: {token, ticket} or {}. Waiters whose lease
-- ran out (a crashed process) are dropped here, so they block nobody for long.
local function head(i)
  local q, l = KEYS[2 * n + i], KEYS[3 * n + i]
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
    local h = held and redis.call('ZRANGE', KEYS[2 * n + i], 0, 0, 'WITHSCORES') or head(i)
    if h[1] == token then
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
    for i = 1, n do
      local q, l = KEYS[2 * n + i], KEYS[3 * n + i]
      redis.call('ZADD', q, 'NX', ticket, token)
      redis.call('ZADD', l, lease_end, token)
      -- Queues of a resource nobody waits for any more vanish on their own.
      redis.call('PEXPIRE', q, ARGV[6])
      redis.call('PEXPIRE', l, ARGV[6])
    end
  end
  return {0, held_ms, epoch, age, trust[1], trust[2], ahead and 1 or 0}
end

-- Counters first: if one of them is not a counter, the script fails before
-- it has written any lock key. Compared as decimal strings (see above).
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local fence = '0'
for i = 1, n do
  local f = redis.call('HINCRBY', KEYS[n + i], 'n', 1)
  -- HINCRBY's reply is exact below 2^53; past that, read the field back as text.
  if f < 9007199254740992 then f = string.format('%.0f', f) else f = redis.call('HGET', KEYS[n + i], 'n') end
  if greater(f, fence) then fence = f end
end
for i = 1, n do
  redis.call('SET', KEYS[i], token, 'PX', ARGV[2])
  -- One fence for a multi-resource lock: raise every counter to the largest,
  -- so the fence exceeds every earlier fence of each resource.
  if n > 1 and greater(fence, redis.call('HGET', KEYS[n + i], 'n')) then
    redis.call('HSET', KEYS[n + i], 'n', fence)
  end
end
-- Our turn has come: leave the queue.
if queued then
  for i = 1, n do
    redis.call('ZREM', KEYS[2 * n + i], token)
    redis.call('ZREM', KEYS[3 * n + i], token)
  end
end
return {1, fence, epoch, age, trust[1], trust[2]}
