-- Shared by acquire.lua and release.lua (see scripts/embed-lua.mjs): a waiter's place in a resource's queue,
-- and acquire.lua's reply to a waiter that did not get the lock. A place taken by the release for its own
-- process's next caller (release.lua) must be the very place that caller's own attempt would have taken.

-- `token` takes its place in the queue of the resource whose keys are named after `base` (keys.ts): ordered by
-- its `ticket` (its arrival; kept when it is queued already), lapsing at `lease_end` (ms) unless renewed. Queues
-- of a resource nobody waits for any more vanish on their own, `lease_ms` after the last place was taken.
local function take_place(base, token, ticket, lease_end, lease_ms)
  local q, l = base .. ':queue', base .. ':leases'
  redis.call('ZADD', q, 'NX', ticket, token)
  redis.call('ZADD', l, lease_end, token)
  redis.call('PEXPIRE', q, lease_ms)
  redis.call('PEXPIRE', l, lease_ms)
end

-- '0 held epoch age trusted longest ahead counter': see acquire.lua.
local function busy_reply(held_ms, epoch, age, trusted, longest, ahead, counter)
  return '0 ' .. held_ms .. ' ' .. epoch .. ' ' .. age .. ' ' .. trusted .. ' ' .. longest .. (ahead and ' 1 ' or ' 0 ') .. counter
end
