-- Rolls the usable pair ARG.id (KEY.key its hash): adds its successor ARG.successorId
-- (KEY.successor) with the pair's subject, label, scopes, expiry and rate_limit override as
-- stored here, then ends the pair: revoked at ARG.createdAt when ARG.revokeNow is '1', else its
-- expiry brought forward to ARG.endsAt (never moved later). Either way it is announced on
-- ARG.channel like a revocation (with Redis's time in Unix ms): a gateway that cached the pair
-- under its former end drops it, and verifies it again under the new one. The cap counts the
-- subject's usable pairs but this one, which is ending.
-- { 'done', 1, label, scopes, expires_at } rolled (what the successor copied; '' for none),
-- { 'done', 0 } no such pair of the subject, { 'done', -1 } it is revoked or expired,
-- { 'done', -2 } the subject's other usable pairs number ARG.maxActive, { 'done', -3 } the
-- successor's id is taken.
HASH[ARG.id] = KEY.key
HASH[ARG.successorId] = KEY.successor
wantMaintenance()
wantUsable(false)
if missing then return need() end
maintain()
local flat = redis.call('HGETALL', KEY.key)
local h = hashOf(flat)
if #flat == 0 or h.subject ~= SUBJECT or not h.secret_hash then return { 'done', 0 } end
if not usableState(h) then return { 'done', -1 } end
if redis.call('EXISTS', KEY.successor) == 1 then return { 'done', -3 } end
local others = usable(false)
if redis.call('SISMEMBER', ACTIVE, ARG.id) == 1 then others = others - 1 end
if others >= tonumber(ARG.maxActive) then return { 'done', -2 } end

local label, scopes, expires = h.label or '', h.scopes or '', h.expires_at or ''
redis.call('HSET', KEY.successor, 'secret_hash', ARG.secretHash, 'subject', SUBJECT, 'label', label,
  'status', 'active', 'created_at', ARG.createdAt)
if expires ~= '' then redis.call('HSET', KEY.successor, 'expires_at', expires) end
if scopes ~= '' then redis.call('HSET', KEY.successor, 'scopes', scopes) end
-- A writer's limit on the pair goes on with its successor: a roll must not lift it.
if h.rate_limit then redis.call('HSET', KEY.successor, 'rate_limit', h.rate_limit) end
redis.call('ZADD', PAIRS, ARG.createdMs, ARG.successorId)
redis.call('SADD', ACTIVE, ARG.successorId)
if expires ~= '' then noteEnd(ARG.successorId, endOf({ status = 'active', expires_at = expires })) end

if ARG.revokeNow == '1' then
  redis.call('HSET', KEY.key, 'status', 'revoked', 'revoked_at', ARG.createdAt)
  h.status, h.revoked_at = 'revoked', ARG.createdAt
  redis.call('HDEL', KEY.key, 'verified')
  redis.call('SREM', ACTIVE, ARG.id)
elseif expires == '' or (isoMs(expires) or 0) > tonumber(ARG.endsMs) then
  -- Its verified record stays: it proves the secret, and every check reads the expiry with it.
  redis.call('HSET', KEY.key, 'expires_at', ARG.endsAt)
  h.expires_at = ARG.endsAt
end
noteEnd(ARG.id, endOf(h))
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('PUBLISH', ARG.channel, string.format('key:%s %d', ARG.id, publishedMs))
return { 'done', 1, label, scopes, expires }
