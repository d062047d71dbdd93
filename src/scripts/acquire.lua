-- Acquire one or more lock keys on this node, all or nothing.
-- KEYS[1..n]      lock keys, in the caller's (sorted) order
-- KEYS[n+1..2n]   fence hashes of the same resources: n = counter, t = 1 once trustworthy
-- KEYS[2n+1]      this node's marker: epoch, born (ms), trusted (1 once this node's data is known complete)
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] n   ARGV[4] epoch to use if the marker is missing
-- Returns {1, fence, epoch, marker age ms, node trusted, resources trusted} when acquired,
--         {0, longest remaining ms of the keys held by others (-1: no expiry), epoch, age, node trusted, resources trusted} when not.
-- Fences are returned as decimal strings: Lua numbers are doubles and would round a counter past 2^53.
local n = tonumber(ARGV[3])
local token = ARGV[1]

-- The marker tells the client whether this node lost its data since it last
-- looked (the epoch changes), how old the data is (restart quarantine), and
-- whether its counters can be trusted (a node that lost its data cannot, see trust.ts).
local marker = KEYS[2 * n + 1]
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local m = redis.call('HMGET', marker, 'epoch', 'born', 'trusted')
local epoch, born, node_trusted = m[1], tonumber(m[2]), m[3] == '1'
if not epoch then
  epoch = ARGV[4]
  born = now_ms
  redis.call('HSET', marker, 'epoch', epoch, 'born', born, 'trusted', '0')
end
local age = now_ms - (born or now_ms)

local resources_trusted = true
for i = 1, n do
  if redis.call('HGET', KEYS[n + i], 't') ~= '1' then resources_trusted = false end
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
if held then
  return {0, held_ms, epoch, age, trust[1], trust[2]}
end

-- Counters first: if one of them is not a counter, the script fails before
-- it has written any lock key. Compared as decimal strings (see above).
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local fence = '0'
for i = 1, n do
  redis.call('HINCRBY', KEYS[n + i], 'n', 1)
  local f = redis.call('HGET', KEYS[n + i], 'n')
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
return {1, fence, epoch, age, trust[1], trust[2]}
