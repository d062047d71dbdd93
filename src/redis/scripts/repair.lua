-- Repair of a node that lost its data: raise its counter to at least ARGV[2] (the largest counter a
-- majority of trusted nodes reported) and mark it trusted again. Raise-only, so it is safe next to
-- acquires and other managers repairing the same node at once.
-- KEYS[1] marker   ARGV[1] the epoch the repairer saw   ARGV[2] fence (decimal string)
-- ARGV[3] quarantine ms: the node must have been back at least this long (its own clock)
-- Returns {1, counter before} when repaired, {0, why} when refused: the node lost its data again since
-- (epoch), it is still in quarantine (young), or it is already trusted.
-- #include _node-state.lua
local m = redis.call('HMGET', KEYS[1], 'epoch', 'born', 'trusted', 'fence')
if m[1] ~= ARGV[1] then return {0, 'epoch'} end
if m[3] == '1' then return {0, 'trusted'} end
if clock() - tonumber(m[2]) < tonumber(ARGV[3]) then return {0, 'young'} end
raise_counter(KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], 'trusted', '1')
return {1, m[4] or '0'}
