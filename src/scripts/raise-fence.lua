-- Fence write-back: raise each counter to at least ARGV[1], never lower it.
-- KEYS[1..n] fence counters   ARGV[1] fence, a decimal string
-- Compared as decimal strings (no leading zeros): Lua numbers are doubles
-- and would round a counter past 2^53.
local fence = ARGV[1]
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i]) or '0'
  if #current < #fence or (#current == #fence and current < fence) then
    redis.call('SET', KEYS[i], fence)
  end
end
return 1
