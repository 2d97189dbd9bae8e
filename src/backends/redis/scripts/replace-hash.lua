-- Compare-and-set of one field of a pair's or a user's hash (KEY.hash): ARG.next replaces
-- ARG.expected, only while the field still holds it. 1 replaced, 0 the field holds something
-- else, -1 there is no such hash (nothing is recreated; the caller may look elsewhere).
if redis.call('EXISTS', KEY.hash) == 0 then return -1 end
if redis.call('HGET', KEY.hash, ARG.field) ~= ARG.expected then return 0 end
redis.call('HSET', KEY.hash, ARG.field, ARG.next)
-- A pair's verified record is over the old hash: it could never match again.
redis.call('HDEL', KEY.hash, 'verified')
return 1
