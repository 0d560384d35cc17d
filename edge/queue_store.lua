-- The waiting room's atomic steps in Redis (edge/queue_store.py loads these
-- blocks by name). Every key of one script belongs to one event and carries
-- the event's hash tag, so a script never crosses a Redis Cluster slot.
--
-- Keys of event E (prefix onsale:{eE}:):
--   seq      arrival counter; a FIFO place is the arrival number
--   queue    ZSET account -> place (kept after admission, for idempotent joins)
--   pre      ZSET account -> arrival number: the pre-queue of a random draw
--   seen     ZSET account -> last poll (ms) of a visitor still waiting
--   joins    ZSET account -> when it first joined (ms): the arrivals the fairness lab
--            replays (onsale fairness export)
--   pending  ZSET account -> admission time (ms): admitted, session not claimed yet
--   active   ZSET account -> last request (ms): shoppers with a session
--   sess     HASH account -> "session_id|device": the one valid session
--   status   HASH serving, draw, paused, state, rate, measured, updated...
--   stats    HASH joined, admitted, abandoned, no_show, expired, revoked
--   lease    STRING "owner|fence" with a TTL: the one admitter of this event
--   fence    counter of lease grants (the fencing token)
--   pow:<challenge>  STRING, TTL the challenge's remaining life (+ 60 s): a
--            proof-of-work challenge that a join used (one join per challenge)
--
-- Fenced scripts start with the FENCE prelude: they do nothing unless the
-- caller's fencing token is the current lease's. The join and claim scripts
-- start with the SPEND prelude.

-- name: fence
local function fenced(key, fence)
  local v = redis.call('GET', key)
  return (not v) or (string.match(v, '|(%d+)$') ~= fence)
end

-- name: spend
-- A join that brings a proof of work names its challenge's key (and ARGV its
-- TTL in ms) last: the challenge is marked spent in the join's own step, and a
-- join that finds it spent already is refused ('replayed') and changes nothing.
local function replayed(key, ttl_ms)
  if not key then return false end
  return not redis.call('SET', key, '1', 'NX', 'PX', ttl_ms)
end

-- name: join
-- KEYS queue pre seq seen status stats joins [spent]; ARGV account now_ms policy [ttl_ms]
-- One place per account: any number of tabs and devices get the same one.
if replayed(KEYS[8], ARGV[4]) then return {'replayed', 0} end
local acc = ARGV[1]
local place = redis.call('ZSCORE', KEYS[1], acc)
if place then return {'placed', tonumber(place)} end
if redis.call('ZSCORE', KEYS[2], acc) then return {'pre', 0} end
local n = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[4], ARGV[2], acc)
redis.call('ZADD', KEYS[7], 'NX', ARGV[2], acc)
redis.call('HINCRBY', KEYS[6], 'joined', 1)
if ARGV[3] == 'random' and not redis.call('HGET', KEYS[5], 'draw') then
  redis.call('ZADD', KEYS[2], n, acc)
  return {'pre', 0}
end
redis.call('ZADD', KEYS[1], n, acc)
return {'placed', n}

-- name: claim
-- KEYS pending active sess stats queue [spent]
-- ARGV account device new_sid now_ms idle_ms passthrough steal [ttl_ms]
-- Start or resume the one session of an admitted account. The same device
-- resumes its session; another device gets a new one only when it asks to
-- enter (steal = 1), which revokes the old; a poll from it learns 'elsewhere'.
-- A passthrough join's proof of work is spent here (it makes no place).
if replayed(KEYS[6], ARGV[8]) then return {'replayed', ''} end
local acc, device, sid, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local cur = redis.call('HGET', KEYS[3], acc)
local last = redis.call('ZSCORE', KEYS[2], acc)
if cur and last and tonumber(last) >= now - tonumber(ARGV[5]) then
  local old_sid, old_device = string.match(cur, '^([^|]*)|(.*)$')
  if old_device == device then
    redis.call('ZADD', KEYS[2], now, acc)
    return {'same', old_sid}
  end
  if ARGV[7] ~= '1' then return {'elsewhere', ''} end
  redis.call('ZADD', KEYS[2], now, acc)
  redis.call('HSET', KEYS[3], acc, sid .. '|' .. device)
  redis.call('HINCRBY', KEYS[4], 'revoked', 1)
  return {'new', sid}
end
if redis.call('ZREM', KEYS[1], acc) == 1 or ARGV[6] == '1' then
  redis.call('ZADD', KEYS[2], now, acc)
  redis.call('HSET', KEYS[3], acc, sid .. '|' .. device)
  if ARGV[6] == '1' and not cur then redis.call('HINCRBY', KEYS[4], 'admitted', 1) end
  return {'new', sid}
end
-- Admitted long ago and gone idle, or dropped: free the account to join again.
redis.call('ZREM', KEYS[2], acc)
redis.call('HDEL', KEYS[3], acc)
redis.call('ZREM', KEYS[5], acc)
return {'gone', ''}

-- name: lease
-- KEYS lease fence; ARGV owner ttl_ms. Returns the fencing token, 0 if another owns it.
local v = redis.call('GET', KEYS[1])
if not v then
  local f = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. f, 'PX', ARGV[2])
  return f
end
local owner, f = string.match(v, '^(.*)|(%d+)$')
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(f)
end
return 0

-- name: release
-- KEYS lease; ARGV owner
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^(.*)|%d+$') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0

-- name: sweep
-- KEYS lease queue pre seen pending active sess stats
-- ARGV fence now_ms grace_ms claim_ms idle_ms limit
-- Drop ghosts (waiting, not polled within the grace), no-shows (admitted,
-- never came within claim_ms) and idle sessions; each frees its slot.
if fenced(KEYS[1], ARGV[1]) then return {-1} end
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[6])
local function drop(zset, cutoff, also, stat)
  local gone = redis.call('ZRANGEBYSCORE', zset, '-inf', '(' .. cutoff, 'LIMIT', 0, limit)
  for _, acc in ipairs(gone) do
    redis.call('ZREM', zset, acc)
    for _, key in ipairs(also) do redis.call('ZREM', key, acc) end
    if zset == KEYS[6] then redis.call('HDEL', KEYS[7], acc) end
  end
  if #gone > 0 then redis.call('HINCRBY', KEYS[8], stat, #gone) end
  return #gone
end
local abandoned = drop(KEYS[4], now - tonumber(ARGV[3]), {KEYS[2], KEYS[3]}, 'abandoned')
local no_show = drop(KEYS[5], now - tonumber(ARGV[4]), {KEYS[2]}, 'no_show')
local expired = drop(KEYS[6], now - tonumber(ARGV[5]), {KEYS[2]}, 'expired')
return {abandoned, no_show, expired, redis.call('ZCARD', KEYS[6]), redis.call('ZCARD', KEYS[5])}

-- name: admit
-- KEYS lease queue seen pending active status stats
-- ARGV fence n now_ms grace_ms cap scan_limit
-- Advance "now serving" over the next places: a ghost is dropped (it does not
-- use the budget), a waiting visitor is admitted (pending until it claims a
-- session). Never more than n, never past the cap of active + pending.
if fenced(KEYS[1], ARGV[1]) then return {-1} end
local now = tonumber(ARGV[3])
local cutoff = now - tonumber(ARGV[4])
local room = tonumber(ARGV[5]) - redis.call('ZCARD', KEYS[5]) - redis.call('ZCARD', KEYS[4])
local budget = math.min(tonumber(ARGV[2]), room)
local serving = tonumber(redis.call('HGET', KEYS[6], 'serving') or '0')
local out = {serving, 0}
local rows = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. serving, '+inf',
                        'WITHSCORES', 'LIMIT', 0, ARGV[6])
local abandoned = 0
for i = 1, #rows, 2 do
  local acc, place = rows[i], tonumber(rows[i + 1])
  local seen = redis.call('ZSCORE', KEYS[3], acc)
  if (not seen) or tonumber(seen) < cutoff then
    redis.call('ZREM', KEYS[2], acc)
    redis.call('ZREM', KEYS[3], acc)
    abandoned = abandoned + 1
    serving = place
  elseif budget > 0 then
    redis.call('ZADD', KEYS[4], now, acc)
    redis.call('ZREM', KEYS[3], acc)
    out[#out + 1] = acc
    budget = budget - 1
    serving = place
  else
    break
  end
end
local admitted = #out - 2
redis.call('HSET', KEYS[6], 'serving', serving)
if admitted > 0 then redis.call('HINCRBY', KEYS[7], 'admitted', admitted) end
if abandoned > 0 then redis.call('HINCRBY', KEYS[7], 'abandoned', abandoned) end
out[1], out[2] = serving, abandoned
return out

-- name: close_draw
-- KEYS lease queue pre seq status; ARGV fence
-- Close the pre-queue of a random draw: everyone who joined so far (also any
-- place given while the policy was fifo) takes part; later arrivals get places
-- after the last drawn one. Returns the number of participants.
if fenced(KEYS[1], ARGV[1]) then return -1 end
local state = redis.call('HGET', KEYS[5], 'draw')
if state then return tonumber(redis.call('HGET', KEYS[5], 'participants') or '0') end
redis.call('ZUNIONSTORE', KEYS[3], 2, KEYS[3], KEYS[2], 'AGGREGATE', 'MIN')
redis.call('DEL', KEYS[2])
local p = redis.call('ZCARD', KEYS[3])
redis.call('SET', KEYS[4], p)
redis.call('HSET', KEYS[5], 'draw', 'closed', 'participants', p)
return p

-- name: assign_draw
-- KEYS lease queue pre; ARGV fence offset account... (repeatable: same places again)
if fenced(KEYS[1], ARGV[1]) then return -1 end
local offset, n = tonumber(ARGV[2]), 0
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[3], ARGV[i]) then
    redis.call('ZADD', KEYS[2], offset + i - 2, ARGV[i])
    n = n + 1
  end
end
return n

-- name: finish_draw
-- KEYS lease pre status; ARGV fence
if fenced(KEYS[1], ARGV[1]) then return -1 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[3], 'draw', 'drawn')
return 1

-- name: merge_prequeue
-- KEYS lease queue pre; ARGV fence. A fifo event with a pre-queue left from a
-- random policy: its visitors keep their arrival numbers as places.
if fenced(KEYS[1], ARGV[1]) then return -1 end
redis.call('ZUNIONSTORE', KEYS[2], 2, KEYS[2], KEYS[3], 'AGGREGATE', 'MIN')
redis.call('DEL', KEYS[3])
return 1
