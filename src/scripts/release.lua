-- Compare-and-delete: remove each lock key only if it still holds our token,
-- and tell waiters at once.
-- KEYS[1..n] lock keys   ARGV[1] owner token   ARGV[2..n+1] release channels
-- Returns how many keys were deleted.
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('PUBLISH', ARGV[i + 1], '1')
    deleted = deleted + 1
  end
end
return deleted
