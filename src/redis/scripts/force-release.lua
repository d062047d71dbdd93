-- Admin delete of a lock key whatever its owner, and wake the waiters.
-- GET first so a key of another type fails with WRONGTYPE and is left alone.
-- KEYS[1] lock key   ARGV[1] release channel
if redis.call('GET', KEYS[1]) then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[1], '*')
  return 1
end
return 0
