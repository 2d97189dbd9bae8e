-- The last step of a move out of the single-slot layout (single-slot.ts): deletes KEY.hash only
-- while it holds exactly ARG.fields (flat, as HGETALL read it before the move; none: it must
-- not exist), and takes ARG.member ('' for none) out of KEY.indexes, sorted sets or sets.
-- 1 done; 0 the hash changed since (a writer wrote it meanwhile), nothing deleted: read it
-- and move it again, so that nothing written there is lost.
local now = redis.call('HGETALL', KEY.hash)
if #now ~= #ARG.fields then return 0 end
local was = {}
for i = 1, #ARG.fields, 2 do was[ARG.fields[i]] = ARG.fields[i + 1] end
for i = 1, #now, 2 do
  if was[now[i]] ~= now[i + 1] then return 0 end
end
redis.call('DEL', KEY.hash)
if ARG.member ~= '' then
  for _, index in ipairs(KEY.indexes) do
    local kind = redis.call('TYPE', index).ok
    if kind == 'zset' then
      redis.call('ZREM', index, ARG.member)
    elseif kind == 'set' then
      redis.call('SREM', index, ARG.member)
    end
  end
end
return 1
