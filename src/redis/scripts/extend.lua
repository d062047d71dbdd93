-- Compare-and-extend each lock key of one lock.
-- KEYS[1..n] lock keys   KEYS[n+1] this node's epoch marker
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] the epoch this node had when the lock was taken
-- Returns {how many keys now hold our token with the new lease, this node's epoch or false}.
--
-- A key that is gone is normally a lost lease. The one exception: the node
-- lost all its data (its epoch is not the one we acquired under), so nobody
-- deleted our key on purpose. Then we write it back, so that restarting nodes
-- one at a time does not wear the holder's quorum away.
local n = #KEYS - 1
local m = redis.call('HMGET', KEYS[n + 1], 'epoch', 'ttl')
local epoch = m[1]
-- The longest lease asked for on this node bounds the restart quarantine (see _node-state.lua).
if tonumber(ARGV[2]) > (tonumber(m[2]) or 0) then redis.call('HSET', KEYS[n + 1], 'ttl', ARGV[2]) end
-- An empty ARGV[3] means we never learned this node's epoch: no write-back there.
local node_was_reset = ARGV[3] ~= '' and epoch ~= ARGV[3]
local extended = 0
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    extended = extended + 1
  elseif not current and node_was_reset then
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
    extended = extended + 1
  end
end
return {extended, epoch}
