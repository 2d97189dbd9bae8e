-- Writes ARG.fields (flat, as HGETALL reads them) as the hash KEY.hash, with the TTL ARG.pttlMs
-- (-1: none), unless KEY.hash exists: what is already there is newer (single-slot.ts moves a
-- user or a subject's settings so). 1 written, 0 not.
if redis.call('EXISTS', KEY.hash) == 1 then return 0 end
redis.call('HSET', KEY.hash, unpack(ARG.fields))
local pttl = tonumber(ARG.pttlMs)
if pttl > 0 then redis.call('PEXPIRE', KEY.hash, pttl) end
return 1
