-- Compare-and-set of one field of a pair's or a user's hash (KEY.hash): ARG.next replaces
-- ARG.expected, only while the field still holds it. A missing hash reads as false, never
-- equal: nothing is recreated. 1 replaced, 0 not.
if redis.call('HGET', KEY.hash, ARG.field) ~= ARG.expected then return 0 end
redis.call('HSET', KEY.hash, ARG.field, ARG.next)
return 1
