-- Removes a web-app user and announces on ARG.channel that its subject's cached credentials
-- must go: 1, or 0 when there was no such user.
local subject = redis.call('HGET', KEY.user, 'subject')
if not subject then return 0 end
redis.call('DEL', KEY.user)
redis.call('PUBLISH', ARG.channel, 'subject:' .. subject)
return 1
