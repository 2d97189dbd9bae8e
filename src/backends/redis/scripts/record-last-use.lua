-- When pairs were last used, in one batch: KEY.hashes[i] (a pair's hash) at ARG.times[i].
-- HSET only on a hash that exists (a pair deleted meanwhile stays deleted), and only forward in
-- time (another instance may have written a later use); fixed-width ISO strings compare as text.
-- Returns the positions (1-based) of the hashes that do not exist: a pair not moved out of the
-- single-slot layout yet is looked for there (credential-store.ts).
local absent = {}
for i, key in ipairs(KEY.hashes) do
  if redis.call('EXISTS', key) == 1 then
    local previous = redis.call('HGET', key, 'last_used_at')
    if not previous or previous < ARG.times[i] then
      redis.call('HSET', key, 'last_used_at', ARG.times[i])
    end
  else
    absent[#absent + 1] = i
  end
end
return absent
