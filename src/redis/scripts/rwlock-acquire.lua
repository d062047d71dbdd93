-- Take a read or a write hold of a read-write lock on this node, with writer preference.
-- KEYS[1] writer (string: owner token, lease as PX)
-- KEYS[2] readers (sorted set: member = owner token, score = lease end, node ms)
-- KEYS[3] write intents (sorted set: member = waiting writer's token, score = end of its intent's lease)
-- KEYS[4] fencelock 0.1's per-name counter (folded into the node's)   KEYS[5] this node's marker (see _node-state.lua)
-- ARGV[1] owner token   ARGV[2] ttl ms   ARGV[3] epoch to use if the marker is missing
-- ARGV[4] 'read' or 'write'   ARGV[5] intent lease ms: a refused writer registers (or renews) its intent
--         for this long; '0' = register none (a single attempt)
-- ARGV[6] '1' = report the marker's age even when the node is trusted (restart quarantine)
-- Readers are refused while a writer holds it or a live write intent exists (existing readers finish);
-- a writer is refused while another writer or any live reader holds it.
-- Returns {1, fence, epoch, marker age ms, node trusted, longest ttl} when granted,
--         {0, ms until the blocking lease ends (-1: never), epoch, age, node trusted, longest ttl} when not.
-- #include _node-state.lua
local token, mode = ARGV[1], ARGV[4]
local now_ms = clock()

-- Reads first, each type-strict: a key of another type fails with WRONGTYPE before anything is written.
local writer = redis.call('GET', KEYS[1])
local readers = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now_ms, '+inf', 'WITHSCORES')
local intents = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now_ms, '+inf', 'WITHSCORES')
local state = {node_state(KEYS[5], ARGV[2], ARGV[3], ARGV[6] == '1')}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms)

-- The set lives as long as its longest lease.
local function expire_with_last(key)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', key, last[2]) end
end

-- How long until what blocks us ends, or nil when nothing does.
local wait
if writer and writer ~= token then wait = redis.call('PTTL', KEYS[1]) end
if not wait and mode == 'read' then
  -- Writer preference: the earliest-ending live intent of another writer blocks new readers.
  for i = 1, #intents, 2 do
    if intents[i] ~= token then
      wait = tonumber(intents[i + 1]) - now_ms
      break
    end
  end
elseif not wait then
  -- A writer waits for every reader: the last lease to end.
  for i = #readers - 1, 1, -2 do
    if readers[i] ~= token then
      wait = tonumber(readers[i + 1]) - now_ms
      break
    end
  end
end
if wait then
  if mode == 'write' and ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[3], now_ms + tonumber(ARGV[5]), token)
    expire_with_last(KEYS[3])
  end
  return {0, wait, state[1], state[2], state[3], state[4]}
end

fold_legacy(KEYS[5], KEYS[4])
local f = next_fence(KEYS[5])
if mode == 'read' then
  redis.call('ZADD', KEYS[2], now_ms + tonumber(ARGV[2]), token)
  expire_with_last(KEYS[2])
else
  redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
  redis.call('ZREM', KEYS[3], token)
end
return {1, f, state[1], state[2], state[3], state[4]}
