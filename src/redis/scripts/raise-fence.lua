-- Fence write-back: raise this node's counter to at least ARGV[1] (never lower it); with ARGV[3] = '1'
-- also mark the node trusted (first use of a new deployment). Refuses (returns 0) if the node lost its
-- data since the acquire saw epoch ARGV[2]: its counter is not the one we read.
-- KEYS[1] marker   ARGV[1] fence (decimal string)   ARGV[2] epoch   ARGV[3] '1' or '0'
-- #include _node-state.lua
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[2] then return 0 end
raise_counter(KEYS[1], ARGV[1])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'trusted', '1') end
return 1
