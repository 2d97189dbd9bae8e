-- Keeps ARG.record as the verified record of the pair whose hash is KEY.key, only while the
-- pair is active and its secret_hash is still ARG.secretHash (the hash the record is over):
-- a pair revoked, or whose secret changed, after its check never gets one. 1 kept, 0 not.
local fields = redis.call('HMGET', KEY.key, 'secret_hash', 'status')
if fields[1] ~= ARG.secretHash or fields[2] ~= 'active' then return 0 end
redis.call('HSET', KEY.key, 'verified', ARG.record)
return 1
