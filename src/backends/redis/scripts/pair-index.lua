-- The index of one subject's pairs: the functions every pair script shares (key names in
-- layout.ts, docs/redis-layout.md):
--   KEY.pairs   ZSET every pair of the subject, scored by created_at (ms)
--   KEY.ends    ZSET the pairs with a known end (expiry or revocation), scored by it (ms): the
--               earliest end known
--   KEY.active  SET  the active pairs (what the cap counts)
--   KEY.legacy  SET  the index of older writers, folded into KEY.pairs
--   KEY.hashes  the hashes of the pairs ARG.ids (in step): the only pair hashes a run reads
--   ARG.nowMs: now; ARG.retainMs: how long an ended pair is kept (ms); ARG.subject
--
-- A script names every key it touches in KEYS, so it cannot read the hash of a pair it finds
-- in an index on the way. It works out first, from the indexes alone, which hashes it needs
-- (want); if it was not given them all, it writes nothing and answers { 'need', id, ... }: the
-- ids whose hashes to declare on the next call (credential-store.ts calls again). Most runs
-- need none: KEY.ends tells which pairs have ended; only a pair whose end has just come, one
-- past its retention, an older writer's index and a listing's page ask for hashes.
local PAIRS, ENDS, ACTIVE, LEGACY = KEY.pairs, KEY.ends, KEY.active, KEY.legacy
local NOW, RETAIN, SUBJECT = tonumber(ARG.nowMs), tonumber(ARG.retainMs), ARG.subject
local PURGE_BATCH = 100

local HASH = {}
for i, id in ipairs(ARG.ids) do HASH[id] = KEY.hashes[i] end

-- The ids whose hashes this run needs, in order; `missing` once one was not declared.
local WANTED, wanted, missing = {}, {}, false
local function want(id)
  if wanted[id] then return end
  wanted[id] = true
  WANTED[#WANTED + 1] = id
  if not HASH[id] then missing = true end
end
local function need()
  local out = { 'need' }
  for _, id in ipairs(WANTED) do out[#out + 1] = id end
  return out
end

-- Milliseconds since the epoch of an RFC 3339 time (the gateway writes 2026-11-22T02:22:23.950Z),
-- or nil. Days from the civil date as in H. Hinnant's days_from_civil.
local function isoMs(text)
  if not text then return nil end
  local y, mo, d, h, mi, s, frac, zone = string.match(text,
    '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)(.*)$')
  if not y then return nil end
  local offset = 0
  if zone ~= 'Z' then
    local sign, oh, om = string.match(zone, '^([+-])(%d%d):(%d%d)$')
    if not sign then return nil end
    offset = (tonumber(oh) * 60 + tonumber(om)) * 60000
    if sign == '-' then offset = -offset end
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + d - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local ms = tonumber(string.sub(frac .. '000', 1, 3))
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60000 + tonumber(s) * 1000 + ms - offset
end

local function hashOf(flat)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end

-- The fields that say whether and when a pair ends (no secret_hash, no label) of a declared
-- pair: nil when its hash is gone.
local function stateOf(id)
  local f = redis.call('HMGET', HASH[id], 'status', 'subject', 'expires_at', 'revoked_at')
  if not f[1] then return nil end
  return { status = f[1], subject = f[2] or nil, expires_at = f[3] or nil, revoked_at = f[4] or nil }
end

-- An expiry that has come; one that does not parse counts as past (as isExpired does).
local function expired(h)
  return h.expires_at ~= nil and (isoMs(h.expires_at) or 0) <= NOW
end

local function usableState(h)
  return h.status == 'active' and not expired(h)
end

-- When the pair ended or will end (ms): its revocation or expiry, the earlier; nil for an
-- active pair without expiry. A time that does not parse counts from now (registered once,
-- it stays: see noteEnd).
local function endOf(h)
  local e = nil
  if h.status ~= 'active' then e = isoMs(h.revoked_at) or NOW end
  if h.expires_at then
    local expires = isoMs(h.expires_at) or NOW
    if not e or expires < e then e = expires end
  end
  return e
end

-- Records the end e (endOf) of a declared pair in ENDS (only ever earlier) and gives its hash
-- the TTL of the end plus the retention, so it leaves Redis even if the subject is never
-- touched again.
local function noteEnd(id, e)
  if not e then return end
  local known = redis.call('ZSCORE', ENDS, id)
  if known and tonumber(known) <= e then return end
  redis.call('ZADD', ENDS, e, id)
  local ttl = e + RETAIN - NOW
  if ttl < 1 then ttl = 1 end
  redis.call('PEXPIRE', HASH[id], ttl)
end

-- The end a pair's hash says now, where a writer moved it since (a later expiry, or none).
local function moveEnd(id, e)
  if e then redis.call('ZADD', ENDS, e, id) else redis.call('ZREM', ENDS, id) end
end

local function forget(id)
  redis.call('ZREM', PAIRS, id)
  redis.call('ZREM', ENDS, id)
  redis.call('SREM', ACTIVE, id)
end

local function gone(e)
  return e ~= nil and e + RETAIN <= NOW
end

-- An older writer's SET index: the pairs not in PAIRS yet, whose hashes fold() reads.
local function legacyIds()
  if redis.call('EXISTS', LEGACY) == 0 then return nil end
  local ids = {}
  for _, id in ipairs(redis.call('SMEMBERS', LEGACY)) do
    if not redis.call('ZSCORE', PAIRS, id) then ids[#ids + 1] = id end
  end
  return ids
end

-- Each pair of the older index moves to PAIRS (scored by its created_at; 0 when unreadable),
-- then the SET goes. A writer that still adds to it is folded in next time.
local function fold(ids)
  if not ids then return end
  for _, id in ipairs(ids) do
    local h = hashOf(redis.call('HGETALL', HASH[id]))
    if h.subject == SUBJECT then
      redis.call('ZADD', PAIRS, isoMs(h.created_at) or 0, id)
      noteEnd(id, endOf(h))
    end
  end
  redis.call('DEL', LEGACY)
end

-- Up to PURGE_BATCH pairs whose known end is older than the retention.
local function due()
  return redis.call('ZRANGEBYSCORE', ENDS, '-inf', NOW - RETAIN, 'LIMIT', 0, PURGE_BATCH)
end

-- Deletes the due pairs. Each is read again first: a writer may have moved its expiry since.
-- One that became due during this run (not declared) waits for the next.
local function purge()
  for _, id in ipairs(due()) do
    if HASH[id] then
      local flat = redis.call('HGETALL', HASH[id])
      local h = hashOf(flat)
      local e = endOf(h)
      if #flat == 0 or h.subject ~= SUBJECT or gone(e) then
        if #flat > 0 and h.subject == SUBJECT then redis.call('DEL', HASH[id]) end
        forget(id)
      else
        moveEnd(id, e)
      end
    end
  end
end

-- What every script that changes or lists pairs does first: fold an older writer's index in,
-- and delete pairs ended longer ago than the retention. wantMaintenance() asks for the hashes
-- that takes; maintain() does it.
local LEGACY_IDS = nil
local function wantMaintenance()
  LEGACY_IDS = legacyIds()
  for _, id in ipairs(LEGACY_IDS or {}) do want(id) end
  for _, id in ipairs(due()) do want(id) end
end
local function maintain()
  fold(LEGACY_IDS)
  purge()
end

-- Whether usable() reads the hash of active pair `id`: every one when `all`, else only one
-- whose end, as far as KEY.ends knows, has come (a writer may have moved it later since).
local function readsActive(id, all)
  if all then return true end
  local known = redis.call('ZSCORE', ENDS, id)
  return known ~= false and tonumber(known) <= NOW
end
local function wantUsable(all)
  for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do
    if readsActive(id, all) then want(id) end
  end
end

-- How many active pairs are usable (unexpired), taking the others out of ACTIVE. The gateway
-- notes a pair's end in KEY.ends when it makes, revokes or reads the pair, and writers add it
-- too, so only a pair whose known end has come needs its hash read; with `all`, every active
-- pair's is (exact even after a writer that revoked a pair without its SREM).
local function usable(all)
  local left = 0
  for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do
    if readsActive(id, all) then
      local h = stateOf(id)
      if h and usableState(h) then
        left = left + 1
        moveEnd(id, endOf(h))
      else
        redis.call('SREM', ACTIVE, id)
        if h then noteEnd(id, endOf(h)) end
      end
    else
      left = left + 1
    end
  end
  return left
end
