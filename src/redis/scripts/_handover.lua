-- Shared by release.lua and dequeue.lua (see scripts/embed-lua.mjs): the hand-over inside the release.
--
-- When someone waits, a released lock key is never left free: it goes straight to the first waiter in
-- line whose place has not lapsed, so that no newcomer can slip in between (acquire.lua's cheap path
-- relies on this: a free key with no queue is free for anyone). Lapsed places (a crashed process) are
-- dropped on the way, never handed a lock.
--
-- The key is written with the waiter's token and, as its lease, what is left of the waiter's place in line:
-- a waiter that died with its place still live holds the lock no longer than that place would have lasted.
-- Given this node's marker (release.lua), the release also issues the grant's fence (the counter raised to
-- the releaser's fence first, so that the nodes of one hand-over issue the same fence) and tells the waiter
-- the grant on its manager's channel: '<token> 1 fence epoch age trusted longest', acquire.lua's grant reply
-- after the token. The waiter may take it up without a request of its own (handed-grant.ts): it dates the
-- lease from a queued attempt whose reply reported a counter below this fence, which therefore came before
-- the grant, for as long as that attempt kept its place (the key's lease), and extends it to its ttl at once.
-- Without such a moment it confirms with an attempt: finding the key holding its token, acquire.lua grants
-- it (its ttl from then, a new fence).
--
-- A waiter of an older fencelock ignores the grant: the token alone, the notification of every hand-over before
-- the grant existed, follows it and wakes that waiter. Its token has no '.' after the manager's id (redlock.ts
-- waiterToken): a waiter whose token has one is woken by the grant, and is sent nothing more. Without a marker
-- (dequeue.lua, or a release of an older fencelock) the token alone is all, and no fence is issued: the waiter
-- confirms.
-- #include _node-state.lua

-- The first waiter of queue `q` whose place (in `l`) has not lapsed, with its lease end; nil if none.
-- Nobody queued costs one ZRANGE (no clock read: TIME is the costliest call here).
local function live_head(q, l)
  -- Bounded: 10 rounds of 100 lapsed places at most; a longer dead queue is left to the next call.
  for _ = 1, 10 do
    local h = redis.call('ZRANGE', q, 0, 0)[1]
    if not h then return nil end
    local lease_end = tonumber(redis.call('ZSCORE', l, h))
    if lease_end and lease_end > clock() then return h, lease_end end
    -- The head's place lapsed (or its lease key expired first): drop it, and other lapsed places with it.
    redis.call('ZREM', q, h)
    local dead = redis.call('ZRANGEBYSCORE', l, '-inf', clock(), 'LIMIT', 0, 100)
    if #dead > 0 then
      redis.call('ZREM', q, unpack(dead))
      redis.call('ZREM', l, unpack(dead))
    end
  end
  return nil
end

-- Lock key `key` (which the caller holds) goes to the first live waiter of its queue, who is told on its
-- manager's channel ('head'); or to `successor` (a caller waiting in the releasing process, not yet in the
-- nodes' queue: local-queue.ts) when its `ticket` (arrival) is earlier than that waiter's, for `ttl_ms`
-- ('successor': release.lua grants it there and then). False when nobody waits: the caller deletes the key.
-- `marker` (nil: none) and `hint` ('' = none): see the grant above.
local function hand_over(key, marker, hint, successor, ticket, ttl_ms)
  local base = string.sub(key, 1, -6) -- without ':lock'
  local q, l = base .. ':queue', base .. ':leases'
  local head, lease_end = live_head(q, l)
  if successor and successor ~= '' then
    local theirs = head and tonumber(redis.call('ZSCORE', q, head))
    local ours = tonumber(ticket)
    if not theirs or ours < theirs or (ours == theirs and successor < head) then
      redis.call('SET', key, successor, 'PX', ttl_ms)
      return 'successor'
    end
  end
  if not head then return false end
  redis.call('SET', key, head, 'PX', lease_end - clock())
  redis.call('ZREM', q, head)
  redis.call('ZREM', l, head)
  -- A mutex owner token starts with its manager's 8-character id: only that process is told.
  local channel = base .. ':released:' .. string.sub(head, 1, 8)
  if marker then
    fold_legacy(marker, base .. ':fence')
    -- ttl '0': the marker keeps the longest ttl the waiter's own attempts recorded.
    redis.call('PUBLISH', channel, head .. ' ' .. grant_reply(marker, '0', string.sub(head, -16), true, hint))
  end
  if not marker or string.sub(head, 9, 9) ~= '.' then redis.call('PUBLISH', channel, head) end
  return 'head'
end
