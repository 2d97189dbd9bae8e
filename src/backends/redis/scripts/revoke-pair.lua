-- Revokes the pair ARG.id (KEY.key its hash) at ARG.revokedAt and announces it on
-- ARG.channel with Redis's time in Unix ms. With ARG.keepLastActive '1', refuses to revoke the
-- subject's last usable pair.
-- { 'done', 1 } revoked (or revoked already: the first time stays), { 'done', 0 } no such
-- pair, { 'done', -1 } it is the last usable one (every active pair's hash read for it).
HASH[ARG.id] = KEY.key
local keepLast = ARG.keepLastActive == '1'
wantMaintenance()
if keepLast then wantUsable(true) end
if missing then return need() end
fold(LEGACY_IDS)
if redis.call('EXISTS', KEY.key) == 0 then return { 'done', 0 } end
local h = hashOf(redis.call('HGETALL', KEY.key))
local active = h.status ~= 'revoked'
if active and keepLast and not expired(h) and usable(true) <= 1 then return { 'done', -1 } end
if active then
  redis.call('HSET', KEY.key, 'status', 'revoked', 'revoked_at', ARG.revokedAt)
  h.status, h.revoked_at = 'revoked', ARG.revokedAt
end
-- Its verified record proves the secret no more: the status refuses it anyway, but a pair a
-- writer sets active again must pass bcrypt again.
redis.call('HDEL', KEY.key, 'verified')
redis.call('SREM', ACTIVE, ARG.id)
noteEnd(ARG.id, endOf(h))
purge()
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('PUBLISH', ARG.channel, string.format('key:%s %d', ARG.id, publishedMs))
return { 'done', 1 }
