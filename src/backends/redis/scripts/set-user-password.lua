-- Replaces the password hash of an existing user: 1, or 0 when there is none (a user removed
-- meanwhile is not brought back).
if redis.call('EXISTS', KEY.user) == 0 then return 0 end
redis.call('HSET', KEY.user, 'password_hash', ARG.passwordHash)
return 1
