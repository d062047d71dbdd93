-- Acquire one or more lock keys on this node, all or nothing.
-- KEYS[1..n]      lock keys, in the caller's (sorted) order
-- KEYS[n+1..2n]   fence counters of the same resources
-- KEYS[2n+1]      this node's epoch marker
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] n   ARGV[4] epoch to use if the marker is missing
-- Returns {1, fence, epoch, marker age ms} when acquired,
--         {0, longest remaining ms of the keys held by others, epoch, marker age ms} when not.
local n = tonumber(ARGV[3])
local token = ARGV[1]

-- The marker tells the client whether this node lost its data since it last
-- looked (the epoch changes) and how old the node's data is (restart quarantine).
local marker = KEYS[2 * n + 1]
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local epoch = redis.call('HGET', marker, 'epoch')
local born
if epoch then
  born = tonumber(redis.call('HGET', marker, 'born')) or now_ms
else
  epoch = ARGV[4]
  born = now_ms
  redis.call('HSET', marker, 'epoch', epoch, 'born', born)
end
local age = now_ms - born

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
    -- -1: a key without expiry, held until someone deletes it.
    if pttl < 0 or held_ms < 0 then held_ms = -1 elseif pttl > held_ms then held_ms = pttl end
  end
end
if held then
  return {0, held_ms, epoch, age}
end

-- Counters first: if one of them is not an integer, the script fails before
-- it has written any lock key. Counters are compared as decimal strings:
-- Lua numbers are doubles and would round a counter past 2^53.
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local fence = '0'
for i = 1, n do
  redis.call('INCR', KEYS[n + i])
  local f = redis.call('GET', KEYS[n + i])
  if greater(f, fence) then fence = f end
end
for i = 1, n do
  redis.call('SET', KEYS[i], token, 'PX', ARGV[2])
  -- One fence for a multi-resource lock: raise every counter to the largest,
  -- so the fence exceeds every earlier fence of each resource.
  if n > 1 and greater(fence, redis.call('GET', KEYS[n + i])) then
    redis.call('SET', KEYS[n + i], fence)
  end
end
return {1, fence, epoch, age}
