-- Fence write-back and repair: raise each counter to at least ARGV[1] (never
-- lower it) and mark it trustworthy; with ARGV[3] = '1' also mark the whole
-- node trusted (first use of a new deployment). Refuses (returns 0) if the node
-- lost its data since the acquire saw epoch ARGV[2]: its counters are not what we read.
-- KEYS[1..n] fence hashes   KEYS[n+1] marker   ARGV[1] fence (decimal string)   ARGV[2] epoch   ARGV[3] '1' or '0'
local n = #KEYS - 1
if redis.call('HGET', KEYS[n + 1], 'epoch') ~= ARGV[2] then return 0 end
local fence = ARGV[1]
for i = 1, n do
  local current = redis.call('HGET', KEYS[i], 'n') or '0'
  if #current < #fence or (#current == #fence and current < fence) then
    redis.call('HSET', KEYS[i], 'n', fence)
  end
  redis.call('HSET', KEYS[i], 't', '1')
end
if ARGV[3] == '1' then redis.call('HSET', KEYS[n + 1], 'trusted', '1') end
return 1
