-- Read-only view of this node's marker (see _node-state.lua), for repair and inspect.
-- KEYS[1] marker
-- Returns {epoch or false, trusted 1/0, fence counter, longest ttl, age ms (-1 without a marker), layout}.
-- #include _node-state.lua
local m = redis.call('HMGET', KEYS[1], 'epoch', 'born', 'trusted', 'fence', 'ttl', 'v')
local age = m[2] and clock() - tonumber(m[2]) or -1
return {m[1], m[3] == '1' and 1 or 0, m[4] or '0', tonumber(m[5]) or 0, age, m[6] or '1'}
