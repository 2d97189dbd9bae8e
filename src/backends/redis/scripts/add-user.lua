-- Adds a web-app user unless the username is taken: 1 added, 0 taken (nothing written).
if redis.call('EXISTS', KEY.user) == 1 then return 0 end
redis.call('HSET', KEY.user, 'password_hash', ARG.passwordHash, 'subject', ARG.subject,
  'created_at', ARG.createdAt)
if ARG.scopes ~= '' then redis.call('HSET', KEY.user, 'scopes', ARG.scopes) end
return 1
