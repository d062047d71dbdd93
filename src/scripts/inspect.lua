-- Read-only view of one resource on this node.
-- KEYS[1] lock key   KEYS[2] fence hash   KEYS[3] epoch marker
-- Returns {owner token or false, remaining ms (-2 when absent), fence counter or false, epoch or false}
local owner = redis.call('GET', KEYS[1])
return {owner, redis.call('PTTL', KEYS[1]), redis.call('HGET', KEYS[2], 'n'), redis.call('HGET', KEYS[3], 'epoch')}
