-- Revokes every usable pair of the subject at ARG.revokedAt, announcing each on ARG.channel
-- with Redis's time in Unix ms:
-- { 'done', id, ... } the ids revoked. Every pair of the index is read, not only the active
-- set: a writer's pair missing from it is revoked too.
local function candidates()
  local ids = redis.call('SMEMBERS', ACTIVE)
  for _, id in ipairs(redis.call('ZRANGE', PAIRS, 0, -1)) do ids[#ids + 1] = id end
  return ids
end
wantMaintenance()
for _, id in ipairs(candidates()) do want(id) end
if missing then return need() end
maintain()
local revoked, seen = { 'done' }, {}
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
for _, id in ipairs(candidates()) do
  local h = not seen[id] and stateOf(id)
  seen[id] = true
  if h and h.subject == SUBJECT and usableState(h) then
    redis.call('HSET', HASH[id], 'status', 'revoked', 'revoked_at', ARG.revokedAt)
    redis.call('HDEL', HASH[id], 'verified')
    h.status, h.revoked_at = 'revoked', ARG.revokedAt
    redis.call('SREM', ACTIVE, id)
    noteEnd(id, endOf(h))
    redis.call('PUBLISH', ARG.channel, string.format('key:%s %d', id, publishedMs))
    revoked[#revoked + 1] = id
  end
end
return revoked
