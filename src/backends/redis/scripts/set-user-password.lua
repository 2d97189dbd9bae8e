-- Replaces the password hash of an existing user and bumps its token generation (the tokens
-- issued before it stop working) and ends its portal sessions (in KEY.sessions, when given: one
-- key or none), then announces on ARG.channel, with Redis's time in Unix ms,
-- that its subject's cached credentials must go: 1, or 0 when there is no such user (a user
-- removed meanwhile is not brought back).
local subject = redis.call('HGET', KEY.user, 'subject')
if not subject then return 0 end
redis.call('HSET', KEY.user, 'password_hash', ARG.passwordHash)
-- An unreadable generation starts again from 1: still unlike the 0 every token read it as.
local generation = redis.call('HGET', KEY.user, 'token_generation')
if generation and not string.match(generation, '^%d+$') then
  redis.call('HDEL', KEY.user, 'token_generation')
end
redis.call('HINCRBY', KEY.user, 'token_generation', 1)
for _, sessions in ipairs(KEY.sessions) do drop_sessions(sessions, ARG.username, nil) end
local now = redis.call('TIME')
local publishedMs = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('PUBLISH', ARG.channel, string.format('subject:%s %d', subject, publishedMs))
return 1
