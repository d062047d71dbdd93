-- Compare-and-extend many locks on this node in one call: the batched form of
-- extend.lua, used when many held locks are due for extension at once.
-- KEYS[1]     this node's epoch marker
-- KEYS[2..]   the lock keys of every lock, lock after lock
-- ARGV[1]     how many locks
-- then per lock: its number of keys, owner token, ttl ms, the epoch this node had when it was taken
-- Returns {this node's epoch or false, then per lock how many of its keys now hold its token with the new lease}.
-- Per lock, the same rules as extend.lua (including writing a key back on a node that lost its data).
local m = redis.call('HMGET', KEYS[1], 'epoch', 'ttl')
local epoch, longest = m[1], tonumber(m[2]) or 0
local reply = {epoch}
local k, a = 2, 2
for _ = 1, tonumber(ARGV[1]) do
  local n, token, ttl, taken_under = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  a = a + 4
  local node_was_reset = taken_under ~= '' and epoch ~= taken_under
  local extended = 0
  for i = k, k + n - 1 do
    local current = redis.call('GET', KEYS[i])
    if current == token then
      redis.call('PEXPIRE', KEYS[i], ttl)
      extended = extended + 1
    elseif not current and node_was_reset then
      redis.call('SET', KEYS[i], token, 'PX', ttl)
      extended = extended + 1
    end
  end
  k = k + n
  reply[#reply + 1] = extended
  if tonumber(ttl) > longest then longest = tonumber(ttl) end
end
-- The longest lease asked for on this node bounds the restart quarantine (see _node-state.lua).
if longest > (tonumber(m[2]) or 0) then redis.call('HSET', KEYS[1], 'ttl', longest) end
return reply
