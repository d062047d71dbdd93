-- Shared by scripts that read the node's clock (see scripts/embed-lua.mjs).

-- The node's clock, read only when needed (TIME is the costliest call on the common path).
local now_ms
local function clock()
  if not now_ms then
    local t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
