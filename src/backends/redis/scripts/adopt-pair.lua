-- Takes in the pair ARG.id moved from the single-slot layout (single-slot.ts): ARG.fields, its
-- hash as read there (HGETALL, flat; a secret_hash and ARG.subject's subject among them), and
-- ARG.pttlMs, its TTL there (-1: none), become KEY.key and the subject's index entries, as
-- create-pair.lua would have written them. A pair already here (moved before by another
-- gateway, or changed here since) keeps its own fields but for what must not be lost: a
-- revocation written there revokes it here too (announced on ARG.channel), and a later
-- last_used_at is kept. { 'done', 'moved' }, { 'done', 'merged' } or { 'done', 'same' };
-- { 'done', 'taken' } when the hash here is another subject's; { 'done', 'fragment' } when
-- ARG.fields hold no secret_hash and no pair is here to merge them into.
HASH[ARG.id] = KEY.key
local there = hashOf(ARG.fields)
if redis.call('EXISTS', KEY.key) == 0 then
  -- A writer's fragment (a revocation alone) makes no pair: it only merges into one.
  if not there.secret_hash then return { 'done', 'fragment' } end
  redis.call('HSET', KEY.key, unpack(ARG.fields))
  local pttl = tonumber(ARG.pttlMs)
  if pttl > 0 then redis.call('PEXPIRE', KEY.key, pttl) end
  redis.call('ZADD', PAIRS, isoMs(there.created_at) or 0, ARG.id)
  if there.status == 'active' then redis.call('SADD', ACTIVE, ARG.id) end
  noteEnd(ARG.id, endOf(there))
  return { 'done', 'moved' }
end
local here = hashOf(redis.call('HGETALL', KEY.key))
-- Another subject's pair of the same id and tag: nothing of it is this one's.
if here.subject ~= SUBJECT then return { 'done', 'taken' } end
local outcome = 'same'
if there.status and there.status ~= 'active' and here.status == 'active' then
  redis.call('HSET', KEY.key, 'status', there.status)
  if there.revoked_at then redis.call('HSET', KEY.key, 'revoked_at', there.revoked_at) end
  here.status, here.revoked_at = there.status, there.revoked_at
  redis.call('SREM', ACTIVE, ARG.id)
  noteEnd(ARG.id, endOf(here))
  redis.call('PUBLISH', ARG.channel, 'key:' .. ARG.id)
  outcome = 'merged'
end
if there.last_used_at and (not here.last_used_at or here.last_used_at < there.last_used_at) then
  redis.call('HSET', KEY.key, 'last_used_at', there.last_used_at)
  outcome = 'merged'
end
return { 'done', outcome }
