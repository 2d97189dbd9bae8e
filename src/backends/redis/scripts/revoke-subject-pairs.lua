-- Revokes every usable pair of the subject's active set at ARG.revokedAt, announcing each on
-- ARG.channel: { 'done', id, ... } the ids revoked.
wantMaintenance()
for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do want(id) end
if missing then return need() end
maintain()
local revoked = { 'done' }
for _, id in ipairs(redis.call('SMEMBERS', ACTIVE)) do
  local h = stateOf(id)
  if h and h.subject == SUBJECT and usableState(h) then
    redis.call('HSET', HASH[id], 'status', 'revoked', 'revoked_at', ARG.revokedAt)
    h.status, h.revoked_at = 'revoked', ARG.revokedAt
    redis.call('SREM', ACTIVE, id)
    noteEnd(id, endOf(h))
    redis.call('PUBLISH', ARG.channel, 'key:' .. id)
    revoked[#revoked + 1] = id
  end
end
return revoked
