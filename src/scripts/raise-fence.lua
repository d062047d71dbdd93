-- Fence write-back: raise each counter to at least ARGV[1], never lower it.
-- KEYS[1..n] fence counters   ARGV[1] fence
local fence = tonumber(ARGV[1])
for i = 1, #KEYS do
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  if current < fence then
    redis.call('SET', KEYS[i], ARGV[1])
  end
end
return 1
