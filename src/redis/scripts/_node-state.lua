-- Shared by the acquire scripts (see scripts/embed-lua.mjs): this node's state.
--
-- One hash per node (per hash slot on a Redis Cluster node, where a script may only touch one slot),
-- the marker, holds everything fencelock keeps for good, so what it stores is bounded by the number of
-- nodes and slots, never by the number of resources ever locked:
--   epoch    random; a new one means the node lost its data (restart without persistence, FLUSHALL, ...)
--   born     the node's clock (ms) when this epoch began: how long ago the node came back empty
--   trusted  '1' once the counter below is known to be complete (bootstrap or repair, see trust.ts)
--   ttl      the longest lease any request that reached this node asked for (restart quarantine)
--   fence    the fence counter: one for every resource on this node, so it rises for all of them at once
--   v        '2': this layout (fencelock 0.1 kept one counter per resource, folded in below)

-- #include _clock.lua

-- Reads the marker (creating it when the node has none: new, or it lost its data) and records `ttl`.
-- The age is read when asked for, and always on an untrusted node (the client may need to quarantine it).
-- Returns epoch, age ms ('-1' when not read), trusted ('1'/'0'), longest ttl ms: four values, kept as the
-- strings Redis gave where possible (a Lua number turned into a reply string costs more than the HMGET).
local function node_state(marker, ttl, new_epoch, want_age)
  local m = redis.call('HMGET', marker, 'epoch', 'born', 'trusted', 'ttl')
  local epoch, born, trusted, longest = m[1], m[2], m[3] == '1', m[4] or '0'
  if not epoch then
    epoch, born = new_epoch, clock()
    redis.call('HSET', marker, 'epoch', epoch, 'born', born, 'trusted', '0', 'v', '2')
  end
  if tonumber(ttl) > tonumber(longest) then
    redis.call('HSET', marker, 'ttl', ttl)
    longest = ttl
  end
  local age = '-1'
  if want_age or not trusted then age = clock() - (tonumber(born) or clock()) end
  return epoch, age, trusted and '1' or '0', longest
end

-- Fences are decimal strings: Lua numbers are doubles and would round a counter past 2^53.
local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- Raise the node's counter to at least `value` (never lower it).
local function raise_counter(marker, value)
  if greater(value, redis.call('HGET', marker, 'fence') or '0') then redis.call('HSET', marker, 'fence', value) end
end

-- fencelock 0.1 kept a counter per resource (<prefix>{<resource>}:fence). Fold it into the node's, so a
-- store that saw its fences is never handed a smaller one, then drop it: it was ours and is covered now.
local function fold_legacy(marker, key)
  local old = redis.call('HGET', key, 'n')
  if old then
    raise_counter(marker, old)
    redis.call('DEL', key)
  end
end

-- The next fence on this node: greater than every fence it issued or was told of (write-back, repair).
local function next_fence(marker)
  local f = redis.call('HINCRBY', marker, 'fence', 1)
  -- HINCRBY's reply is exact below 2^53; past that, read the field back as text.
  if f < 9007199254740992 then return string.format('%.0f', f) end
  return redis.call('HGET', marker, 'fence')
end

-- One key just granted for `ttl` ms (acquire.lua's cheap path, release.lua's grant to the releasing process's
-- next caller): the node's state, the counter raised to `hint` ('' = none), a new fence, as acquire.lua's
-- grant reply '1 fence epoch age trusted longest'.
local function grant_reply(marker, ttl, new_epoch, want_age, hint)
  local epoch, age, trusted, longest = node_state(marker, ttl, new_epoch, want_age)
  if hint ~= '' then raise_counter(marker, hint) end
  return '1 ' .. next_fence(marker) .. ' ' .. epoch .. ' ' .. age .. ' ' .. trusted .. ' ' .. longest
end
