-- One step of folding fencelock 0.1's per-resource counters into this node's counter (a standalone
-- node upgraded from 0.1; see _node-state.lua). Once the scan is through, the marker says layout 2,
-- and a repair may then read this node's counter as covering every resource.
-- KEYS[1] marker   ARGV[1] SCAN cursor   ARGV[2] MATCH pattern of the old counters   ARGV[3] the marker's epoch
-- Returns the next cursor ('0': done), or false if the node lost its data meanwhile.
-- #include _node-state.lua
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[3] then return false end
local step = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', 1000, 'TYPE', 'hash')
for _, key in ipairs(step[2]) do
  -- Only what 0.1 wrote there: a hash of n (counter) and t (trust flag), nothing a user might have stored.
  local ours = true
  for _, field in ipairs(redis.call('HKEYS', key)) do
    if field ~= 'n' and field ~= 't' then ours = false end
  end
  if ours then fold_legacy(KEYS[1], key) end
end
if step[1] == '0' then redis.call('HSET', KEYS[1], 'v', '2') end
return step[1]
