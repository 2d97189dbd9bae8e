-- Keeps a new portal session (ARG.session, JSON) under ARG.id in KEY.sessions, only while the
-- user's hash (KEY.user, when given: one key or none) holds ARG.subject: 1 kept, 0 no such
-- user (nothing written). Sessions of the tag that have ended by ARG.nowMs are dropped, and the
-- hash lives at least ARG.ttlMs more (until the new session ends).
local user = KEY.user[1]
if user ~= nil and redis.call('HGET', user, 'subject') ~= ARG.subject then return 0 end
drop_sessions(KEY.sessions, nil, tonumber(ARG.nowMs))
redis.call('HSET', KEY.sessions, ARG.id, ARG.session)
local ttl = tonumber(ARG.ttlMs)
if redis.call('PTTL', KEY.sessions) < ttl then redis.call('PEXPIRE', KEY.sessions, ttl) end
return 1
