-- Read-only view of one resource on this node.
-- KEYS[1] lock key   KEYS[2] this node's marker   KEYS[3] the resource's wait queue
-- KEYS[4] fencelock 0.1's counter of the resource (not folded in yet if untouched since the upgrade)
-- Returns {owner token or false, remaining ms (-2 when absent), waiters, then the marker as read-node.lua,
-- its fence being the larger of the node's counter and the resource's old one}.
-- #include _node-state.lua
local owner = redis.call('GET', KEYS[1])
local m = redis.call('HMGET', KEYS[2], 'epoch', 'born', 'trusted', 'fence', 'ttl', 'v')
local age = m[2] and clock() - tonumber(m[2]) or -1
local fence, old = m[4] or '0', redis.call('HGET', KEYS[4], 'n')
if old and greater(old, fence) then fence = old end
return {owner, redis.call('PTTL', KEYS[1]), redis.call('ZCARD', KEYS[3]),
  m[1], m[3] == '1' and 1 or 0, fence, tonumber(m[5]) or 0, age, m[6] or '1'}
