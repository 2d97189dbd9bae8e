-- One page of the subject's pairs: up to ARG.limit in ARG.order ('desc' or 'asc') after the
-- pair ARG.after ('' from the first), each with the fields ARG.fields of its hash (by
-- position: subject, status, revoked_at and expires_at first; no secret hash).
-- { 'done', 0 } when ARG.after is not in the index, else { 'done', 1, id, values, id, values,
-- ... }. Entries whose hash is gone, belongs to another subject or is past the retention are
-- taken out of the index on the way and do not count towards the limit.
local limit, desc, after = tonumber(ARG.limit), ARG.order == 'desc', ARG.after
local SCAN_BATCH = 1000

-- Where the page starts in the index (0-based), or nil when ARG.after is not in it.
local function start()
  if after == '' then return 0 end
  local rank = redis.call(desc and 'ZREVRANK' or 'ZRANK', PAIRS, after)
  return rank and rank + 1
end
local function range(from, count)
  return redis.call(desc and 'ZREVRANGE' or 'ZRANGE', PAIRS, from, from + count - 1)
end

-- The page as the index stands now: its hashes are read once maintenance is done.
wantMaintenance()
local first = start()
if first then
  for _, id in ipairs(range(first, limit)) do want(id) end
end
if missing then return need() end
maintain()

local at = start()
if not at then return { 'done', 0 } end
local out, found, dropped = { 'done', 1 }, 0, {}
while found < limit do
  local ids = range(at, limit - found)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    if not HASH[id] then
      -- Entries dropped above left the page short. Those that follow may be gone too, and in
      -- numbers (pairs that ended together leave Redis together, by their TTL): ask for a
      -- whole batch of them, so each run drops up to SCAN_BATCH whatever the page's size.
      for _, later in ipairs(range(at, math.max(limit - found, SCAN_BATCH))) do want(later) end
      for _, left in ipairs(dropped) do forget(left) end
      return need()
    end
  end
  at = at + #ids
  for _, id in ipairs(ids) do
    local values = redis.call('HMGET', HASH[id], unpack(ARG.fields))
    if values[1] ~= SUBJECT then
      dropped[#dropped + 1] = id
    else
      local h = { status = values[2], revoked_at = values[3] or nil, expires_at = values[4] or nil }
      local e = endOf(h)
      if gone(e) then
        redis.call('DEL', HASH[id])
        dropped[#dropped + 1] = id
      else
        noteEnd(id, e)
        out[#out + 1] = id
        out[#out + 1] = values
        found = found + 1
      end
    end
  end
end
for _, id in ipairs(dropped) do forget(id) end
return out
