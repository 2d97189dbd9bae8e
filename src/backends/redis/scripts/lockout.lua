-- The policy of protection/lockout-policy.ts, one run for every step so that each is atomic
-- across instances and workers, on Redis's clock. KEY.counters: one to three counters (the
-- order of LOCKOUT_SCOPES), each a hash: `f` failures, `p` pending attempts, `pt` when the last
-- was reserved, `lu` locked until (ms); each expires (PEXPIRE) `windowMs` after its lock ends,
-- and never sooner than a reservation's life.
--
-- ARG.op: `begin`, `check`, `success`, `failure` or `error`; ARG.limits: per counter its
-- threshold, initialLockMs and maxLockMs; ARG.clears: the counter a success deletes (1-based;
-- 0 none). The counters of one run share a slot: a target's are run in two (lockout-store.ts).
-- Returns for begin/check: {0} (allowed, reserved unless check) or {1, index, waitMs, locked}
-- (locked 1 when that counter is locked, 0 when only its attempts in flight refuse);
-- for failure: {index, lockMs, failures}... of each lock started; otherwise {}. A counter a
-- success or an error leaves empty (no failure, nothing pending, no lock) is deleted.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARG.op
local windowMs = tonumber(ARG.windowMs)
local reservationMs = tonumber(ARG.reservationMs)
local clears = tonumber(ARG.clears)

local function lockMsAfter(f, threshold, initial, cap)
  if f < threshold then return 0 end
  return math.min(initial * 2 ^ (f - threshold), cap)
end

local function keep(key, lu)
  local ms = math.max(math.max(0, lu - now) + windowMs, reservationMs)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end

local states = {}
for i, key in ipairs(KEY.counters) do
  local v = redis.call('HMGET', key, 'f', 'p', 'pt', 'lu')
  local s = { f = tonumber(v[1]) or 0, p = tonumber(v[2]) or 0, pt = tonumber(v[3]) or 0,
    lu = tonumber(v[4]) or 0, exists = v[1] ~= false or v[2] ~= false }
  if now - s.pt > reservationMs then s.p = 0 end
  local base = (i - 1) * 3
  s.threshold = tonumber(ARG.limits[base + 1])
  s.initial = tonumber(ARG.limits[base + 2])
  s.cap = tonumber(ARG.limits[base + 3])
  states[i] = s
end

if op == 'begin' or op == 'check' then
  local longest, which, locked = 0, 0, 0
  for i, s in ipairs(states) do
    local wait, lock = 0, 0
    if s.lu > now then
      wait, lock = s.lu - now, 1
    elseif s.p > 0 and s.f + s.p >= s.threshold then
      wait = math.max(1, lockMsAfter(s.f + s.p, s.threshold, s.initial, s.cap))
    end
    if wait > longest then longest, which, locked = wait, i, lock end
  end
  if longest > 0 then return { 1, which, longest, locked } end
  if op == 'check' then return { 0 } end
  for i, key in ipairs(KEY.counters) do
    redis.call('HSET', key, 'f', states[i].f, 'p', states[i].p + 1, 'pt', now, 'lu', states[i].lu)
    keep(key, states[i].lu)
  end
  return { 0 }
end

local locks = {}
for i, key in ipairs(KEY.counters) do
  local s = states[i]
  if op == 'success' and i == clears then
    redis.call('DEL', key)
  elseif op == 'failure' then
    local f = s.f + 1
    local lockMs = lockMsAfter(f, s.threshold, s.initial, s.cap)
    local lu = s.lu
    if lockMs > 0 then
      lu = now + lockMs
      table.insert(locks, i)
      table.insert(locks, lockMs)
      table.insert(locks, f)
    end
    redis.call('HSET', key, 'f', f, 'p', math.max(0, s.p - 1), 'lu', lu)
    keep(key, lu)
  elseif s.exists then
    -- A counter left with nothing in it is deleted, as the in-process lockout drops it (isEmpty):
    -- else a begin given back (another counter refused) would leave one per id tried, and a
    -- flood of random ids from a locked network would fill Redis for windowSec.
    local p = math.max(0, s.p - 1)
    if s.f == 0 and p == 0 and s.lu <= now then
      redis.call('DEL', key)
    else
      redis.call('HSET', key, 'p', p)
    end
  end
end
return locks
