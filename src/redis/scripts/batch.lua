-- Several mutex acquire and release requests to one node in one call (src/redis/batch.ts): each runs exactly
-- as its own script would (acquire.lua, release.lua, made local functions of this one), one after the other,
-- so the batch is what the node would have done with those calls back to back on one connection. What it
-- saves is the per-call work of the client and of the server (one command to build, send, parse and
-- dispatch instead of one per request). Only for standalone nodes: the keys of many resources would span
-- many hash slots of a Cluster.
-- KEYS       every request's keys, one request after the other
-- ARGV[1]    how many requests
-- then per request: its script ('a' acquire, 'r' release), its key count, its argument count, its arguments
-- Returns one reply per request, in order: its script's reply, or {message} (a one-element array; neither
-- script replies with an array) when that request failed. A failed request (a key of another type: WRONGTYPE)
-- fails alone: what it wrote before the error stays, as it would after its own call, and the others run on.
-- The node's clock (TIME, _clock.lua) is read at most once per call; for the requests after the first, that
-- reading is a few hundred microseconds early at most, which only ever makes a queue lease end sooner and a
-- lapsed waiter be dropped later.
-- #include _node-state.lua
-- #include _handover.lua
-- #include _place.lua
-- #function acquire acquire.lua
-- #function release release.lua
local run = { a = acquire, r = release }
local replies, k, a = {}, 0, 2
for r = 1, tonumber(ARGV[1]) do
  local script, nkeys, nargs = run[ARGV[a]], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local keys, args = {}, {}
  for i = 1, nkeys do keys[i] = KEYS[k + i] end
  for i = 1, nargs do args[i] = ARGV[a + 2 + i] end
  k, a = k + nkeys, a + 3 + nargs
  local ok, reply = pcall(script, keys, args)
  if ok then
    replies[r] = reply
  else
    replies[r] = { type(reply) == 'table' and reply.err or tostring(reply) }
  end
end
return replies
