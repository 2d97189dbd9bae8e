/**
 * The Lua scripts that change or list one subject's pairs in Redis (the layout is in
 * redis-store.ts and the README). Every script takes the same first KEYS and ARGV, so one
 * library serves them all:
 *
 *   KEYS[1] <p>subject:<s>:pairs   ZSET every pair of the subject, scored by created_at (ms)
 *   KEYS[2] <p>subject:<s>:ends    ZSET the pairs with an end (expiry or revocation), scored
 *                                       by it (ms): the earliest end known
 *   KEYS[3] <p>subject:<s>:active  SET  the active pairs (what the cap counts)
 *   KEYS[4] <p>subject:<s>:keys    SET  the index of older writers, folded into :pairs
 *   ARGV[1] the key hash prefix (<p>key:), ARGV[2] now (ms), ARGV[3] now (ISO 8601 UTC),
 *   ARGV[4] the retention of ended pairs (ms), ARGV[5] the subject
 *
 * The key hashes are named from ARGV[1], not declared: they share the subject keys' hash
 * tag (the key prefix), so Redis Cluster keeps them in the same slot.
 */
const LIBRARY = `
local PAIRS, ENDS, ACTIVE, LEGACY = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local KP, NOW, NOW_ISO, RETAIN, SUBJECT = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5]
local PURGE_BATCH = 100

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

-- The fields that say whether and when a pair ends (no secret_hash, no label): nil when the
-- hash is gone.
local function stateOf(id)
  local f = redis.call('HMGET', KP .. id, 'status', 'subject', 'expires_at', 'revoked_at')
  if not f[1] then return nil end
  return { status = f[1], subject = f[2] or nil, expires_at = f[3] or nil, revoked_at = f[4] or nil }
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

-- Records the pair's end e (endOf) in ENDS (only ever earlier) and gives its hash the TTL of
-- the end plus the retention, so it leaves Redis even if the subject is never touched again.
local function noteEnd(id, e)
  if not e then return end
  local known = redis.call('ZSCORE', ENDS, id)
  if known and tonumber(known) <= e then return end
  redis.call('ZADD', ENDS, e, id)
  local ttl = e + RETAIN - NOW
  if ttl < 1 then ttl = 1 end
  redis.call('PEXPIRE', KP .. id, ttl)
end

local function forget(id)
  redis.call('ZREM', PAIRS, id)
  redis.call('ZREM', ENDS, id)
  redis.call('SREM', ACTIVE, id)
end

local function gone(e)
  return e ~= nil and e + RETAIN <= NOW
end

-- An older writer's SET index: each pair moves to PAIRS (scored by its created_at; 0 when
-- unreadable), then the SET goes. A writer that still adds to it is folded in next time.
local function fold()
  if redis.call('EXISTS', LEGACY) == 0 then return end
  for _, id in ipairs(redis.call('SMEMBERS', LEGACY)) do
    if not redis.call('ZSCORE', PAIRS, id) then
      local h = hashOf(redis.call('HGETALL', KP .. id))
      if h.subject == SUBJECT then
        redis.call('ZADD', PAIRS, isoMs(h.created_at) or 0, id)
        noteEnd(id, endOf(h))
      end
    end
  end
  redis.call('DEL', LEGACY)
end

-- Deletes up to PURGE_BATCH pairs ended more than the retention ago. Each is read again
-- first: a writer may have moved its expiry since.
local function purge()
  local due = redis.call('ZRANGEBYSCORE', ENDS, '-inf', NOW - RETAIN, 'LIMIT', 0, PURGE_BATCH)
  for _, id in ipairs(due) do
    local flat = redis.call('HGETALL', KP .. id)
    local h = hashOf(flat)
    local e = endOf(h)
    if #flat == 0 or h.subject ~= SUBJECT or gone(e) then
      if #flat > 0 and h.subject == SUBJECT then redis.call('DEL', KP .. id) end
      forget(id)
    elseif e then
      redis.call('ZADD', ENDS, e, id)
    else
      redis.call('ZREM', ENDS, id)
    end
  end
end

-- Takes what is no longer usable (revoked, expired, deleted) out of ACTIVE; returns how
-- many are left. Expiry compares the fixed-width ISO strings as text.
local function usable()
  local left = 0
  for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do
    local h = stateOf(id)
    if h and h.status == 'active' and not (h.expires_at and h.expires_at <= NOW_ISO) then
      left = left + 1
    else
      redis.call('SREM', ACTIVE, id)
      if h then noteEnd(id, endOf(h)) end
    end
  end
  return left
end
`;

/** ARGV[6] maxActive, [7] secret_hash, [8] label, [9] created_at, [10] created ms, [11] id, [12] expires_at or '', [13] scopes or ''. KEYS[5] the key hash. */
export const CREATE_PAIR = `${LIBRARY}
fold()
purge()
if redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
if usable() >= tonumber(ARGV[6]) then return -1 end
redis.call('HSET', KEYS[5], 'secret_hash', ARGV[7], 'subject', SUBJECT, 'label', ARGV[8], 'status', 'active', 'created_at', ARGV[9])
if ARGV[12] ~= '' then redis.call('HSET', KEYS[5], 'expires_at', ARGV[12]) end
if ARGV[13] ~= '' then redis.call('HSET', KEYS[5], 'scopes', ARGV[13]) end
redis.call('ZADD', PAIRS, ARGV[10], ARGV[11])
redis.call('SADD', ACTIVE, ARGV[11])
if ARGV[12] ~= '' then noteEnd(ARGV[11], endOf({ status = 'active', expires_at = ARGV[12] })) end
return 1`;

export const COUNT_USABLE = `${LIBRARY}
return usable()`;

/**
 * ARGV[6] revoked_at, [7] the id, [8] '1' to keep the last usable pair. KEYS[5] the key
 * hash, KEYS[6] the revocation channel. 0: no such pair; -1: it is the last usable one.
 */
export const REVOKE_PAIR = `${LIBRARY}
fold()
if redis.call('EXISTS', KEYS[5]) == 0 then return 0 end
local h = hashOf(redis.call('HGETALL', KEYS[5]))
local active = h.status ~= 'revoked'
if active and ARGV[8] == '1' then
  local expired = h.expires_at and h.expires_at <= NOW_ISO
  if not expired and usable() <= 1 then return -1 end
end
if active then
  redis.call('HSET', KEYS[5], 'status', 'revoked', 'revoked_at', ARGV[6])
  h.status, h.revoked_at = 'revoked', ARGV[6]
end
redis.call('SREM', ACTIVE, ARGV[7])
noteEnd(ARGV[7], endOf(h))
purge()
redis.call('PUBLISH', KEYS[6], 'key:' .. ARGV[7])
return 1`;

/**
 * Every usable pair of the subject (in ACTIVE, or indexed in PAIRS with status active and
 * unexpired) is revoked and announced. ARGV[6] revoked_at; KEYS[5] the channel. Returns the ids.
 */
export const REVOKE_SUBJECT_PAIRS = `${LIBRARY}
fold()
purge()
local revoked, seen = {}, {}
local function revoke(id)
  if seen[id] then return end
  seen[id] = true
  local h = stateOf(id)
  if not h or h.status ~= 'active' or h.subject ~= SUBJECT then return end
  if h.expires_at and h.expires_at <= NOW_ISO then return end
  redis.call('HSET', KP .. id, 'status', 'revoked', 'revoked_at', ARGV[6])
  h.status, h.revoked_at = 'revoked', ARGV[6]
  redis.call('SREM', ACTIVE, id)
  noteEnd(id, endOf(h))
  redis.call('PUBLISH', KEYS[5], 'key:' .. id)
  revoked[#revoked + 1] = id
end
for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do revoke(id) end
for _, id in ipairs(redis.call('ZRANGE', PAIRS, 0, -1)) do revoke(id) end
return revoked`;

/**
 * The fields LIST_PAIRS returns of each pair, in this order: all but secret_hash (and
 * rate_limit). Its checks read the first four by position.
 */
export const LISTED_FIELDS = [
  'subject',
  'status',
  'revoked_at',
  'expires_at',
  'label',
  'created_at',
  'scopes',
  'last_used_at',
] as const;

/**
 * One page: ARGV[6] limit, [7] 'desc' or 'asc', [8] the id after which it starts ('' from
 * the first). Returns {0} when that id is not in the index, else {1, id, values, id, values,
 * ...}: up to `limit` pairs of the subject, the LISTED_FIELDS of each read here, in one round
 * trip (by position: half the reply of HGETALL, and no secret hash). Entries whose hash is
 * gone, belongs to another subject or is past the retention are taken out of the index on
 * the way and do not count towards the limit.
 */
export const LIST_PAIRS = `${LIBRARY}
fold()
purge()
local limit, desc, after = tonumber(ARGV[6]), ARGV[7] == 'desc', ARGV[8]
local start = 0
if after ~= '' then
  local rank = redis.call(desc and 'ZREVRANK' or 'ZRANK', PAIRS, after)
  if not rank then return { 0 } end
  start = rank + 1
end
local out, found, dropped = { 1 }, 0, {}
while found < limit do
  local ids = redis.call(desc and 'ZREVRANGE' or 'ZRANGE', PAIRS, start, start + limit - found - 1)
  if #ids == 0 then break end
  start = start + #ids
  for _, id in ipairs(ids) do
    local values = redis.call('HMGET', KP .. id, ${LISTED_FIELDS.map((f) => `'${f}'`).join(', ')})
    local h = { status = values[2], revoked_at = values[3] or nil, expires_at = values[4] or nil }
    if values[1] ~= SUBJECT then
      dropped[#dropped + 1] = id
    else
      local e = endOf(h)
      if gone(e) then
        redis.call('DEL', KP .. id)
        dropped[#dropped + 1] = id
      else
        noteEnd(id, e)
        out[#out + 1] = id
        out[#out + 1] = values
        found = found + 1
      end
    end
  end
end
for _, id in ipairs(dropped) do forget(id) end
return out`;
