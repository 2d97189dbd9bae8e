-- Adds the pair ARG.id (KEY.key its hash) unless the subject already has ARG.maxActive usable
-- pairs: { 'done', 1 } made, { 'done', 0 } the id is taken, { 'done', -1 } capped. Expired
-- pairs leave the active set here, atomically with the check.
HASH[ARG.id] = KEY.key
wantMaintenance()
wantUsable(false)
if missing then return need() end
maintain()
if redis.call('EXISTS', KEY.key) == 1 then return { 'done', 0 } end
if usable(false) >= tonumber(ARG.maxActive) then return { 'done', -1 } end
redis.call('HSET', KEY.key, 'secret_hash', ARG.secretHash, 'subject', SUBJECT, 'label', ARG.label,
  'status', 'active', 'created_at', ARG.createdAt)
if ARG.expiresAt ~= '' then redis.call('HSET', KEY.key, 'expires_at', ARG.expiresAt) end
if ARG.scopes ~= '' then redis.call('HSET', KEY.key, 'scopes', ARG.scopes) end
redis.call('ZADD', PAIRS, ARG.createdMs, ARG.id)
redis.call('SADD', ACTIVE, ARG.id)
if ARG.expiresAt ~= '' then
  noteEnd(ARG.id, endOf({ status = 'active', expires_at = ARG.expiresAt }))
end
return { 'done', 1 }
