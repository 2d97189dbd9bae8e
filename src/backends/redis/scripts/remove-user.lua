-- Removes a web-app user, ends its portal sessions (in KEY.sessions, when given: one key or
-- none) and announces on ARG.channel, with Redis's time in Unix ms, that its subject's cached
-- credentials must go: 1, or 0 when there was no such user.
local subject = redis.call('HGET', KEY.user, 'subject')
if not subject then return 0 end
redis.call('DEL', KEY.user)
for _, sessions in ipairs(KEY.sessions) do drop_sessions(sessions, ARG.username, nil) end
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('PUBLISH', ARG.channel, string.format('subject:%s %d', subject, publishedMs))
return 1
