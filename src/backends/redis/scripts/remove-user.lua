-- Removes a web-app user and announces on ARG.channel, with Redis's time in Unix ms, that its
-- subject's cached credentials must go: 1, or 0 when there was no such user.
local subject = redis.call('HGET', KEY.user, 'subject')
if not subject then return 0 end
redis.call('DEL', KEY.user)
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('PUBLISH', ARG.channel, string.format('subject:%s %d', subject, publishedMs))
return 1
