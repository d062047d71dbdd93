-- Take one permit of a counting semaphore on this node.
-- Each permit sits in a slot in [0, limit): at most one live holder per slot on a node, so a permit
-- held on a quorum of nodes owns its slot everywhere, and no more permits than slots can be held
-- at once (counting alone would not do: holders on overlapping quorums could exceed the limit).
-- KEYS[1] permits (sorted set: member = '<slot>:<owner token>', score = lease end, node ms)
-- KEYS[2] fencelock 0.1's per-name counter (folded into the node's, see _node-state.lua)
-- KEYS[3] this node's marker (see _node-state.lua)
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] limit   ARGV[4] epoch to use if the marker is missing
-- ARGV[5] slot: '' = the lowest free slot below the limit, else exactly this one
-- ARGV[6] '1' = report the marker's age even when the node is trusted (restart quarantine)
-- Returns {1, fence, epoch, marker age ms, node trusted, longest ttl, slot} when granted,
--         {0, ms until the blocking lease ends (-1: never), epoch, age, node trusted, longest ttl} when not.
-- #include _node-state.lua
local token, limit, want = ARGV[1], tonumber(ARGV[3]), ARGV[5]
local now_ms = clock()

-- Reads first, each type-strict: a key of another type fails with WRONGTYPE before anything is written.
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now_ms, '+inf', 'WITHSCORES')
local state = {node_state(KEYS[3], ARGV[2], ARGV[4], ARGV[6] == '1')}

-- Leases that ended free their slots (a crashed holder's permit comes back here).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
local used, holders, first_end = {}, 0, nil
for i = 1, #live, 2 do
  local slot, owner = string.match(live[i], '^(%d+):(.*)$')
  local lease_end = tonumber(live[i + 1])
  if owner == token then
    -- Our own earlier attempt of this same acquire (a late reply): take it back, then ask afresh.
    redis.call('ZREM', KEYS[1], live[i])
  else
    holders = holders + 1
    used[slot] = lease_end
    if not first_end then first_end = lease_end end
  end
end

local slot
if holders < limit then
  if want == '' then
    for s = 0, limit - 1 do
      if not used[tostring(s)] then
        slot = tostring(s)
        break
      end
    end
  elseif tonumber(want) < limit and not used[want] then
    slot = want
  end
end
if not slot then
  local until_ms = (want ~= '' and used[want]) or first_end
  return {0, until_ms and (until_ms - now_ms) or 0, state[1], state[2], state[3], state[4]}
end

fold_legacy(KEYS[3], KEYS[2])
local f = next_fence(KEYS[3])
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), slot .. ':' .. token)
-- The set lives as long as its longest lease: a semaphore nobody holds leaves nothing behind.
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {1, f, state[1], state[2], state[3], state[4], slot}
