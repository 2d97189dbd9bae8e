-- Compare-and-set of one portal session (ARG.id in KEY.sessions): ARG.next replaces
-- ARG.expected, only while the field still holds it: 1 replaced, 0 not (changed, or gone: a
-- session ended meanwhile is never brought back). The hash then lives at least ARG.ttlMs more.
if redis.call('HGET', KEY.sessions, ARG.id) ~= ARG.expected then return 0 end
redis.call('HSET', KEY.sessions, ARG.id, ARG.next)
local ttl = tonumber(ARG.ttlMs)
if redis.call('PTTL', KEY.sessions) < ttl then redis.call('PEXPIRE', KEY.sessions, ttl) end
return 1
