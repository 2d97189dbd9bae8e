-- One rate-limit check, one round trip: reads the overrides, decides every bucket with GCRA on
-- Redis's own clock (the one clock every instance shares) and charges them all or none.
--
-- KEY.buckets: the buckets; KEY.overrides: the hashes whose `rate_limit` field may replace a
-- bucket's policy, each once. ARG.policies: per bucket its requests, periodSec, burst
-- (requests 0: no policy unless overridden), its override (1-based in KEY.overrides, 0 for
-- none), its count (requests charged at once when the bucket holds them: a lease; the first
-- is this request's) and enforce (0: a shadow limit, which never refuses).
-- Returns { allowed, retryAfterUs, then per bucket requests, periodSec, burst, remaining,
-- waitUs, granted } (requests 0 for a bucket without a policy), then per override in no form the
-- gateway reads: its number and the first 64 characters of its value. The math is
-- protection/rate-policy.ts's gcra on whole µs, the override's form its
-- parseRateLimitOverride; a bucket's key expires when its TAT passes (a full bucket needs no
-- state). Numbers are written with %.0f: Lua 5.1's tostring would round µs timestamps (%.14g).
local nb = #KEY.buckets
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local read, malformed = {}, {}
local function override(o)
  if read[o] ~= nil then return read[o] end
  local policy = false
  local v = redis.call('HGET', KEY.overrides[o], 'rate_limit')
  if v == 'none' then
    policy = 'none'
  elseif v then
    local r, p, b = string.match(v, '^(%d+)/(%d+),(%d+)$')
    if not r then
      r, p = string.match(v, '^(%d+)/(%d+)$')
      b = r
    end
    if r and #r <= 10 and #p <= 8 and #b <= 10 then
      r, p, b = tonumber(r), tonumber(p), tonumber(b)
      if r >= 1 and r <= 1000000000 and p >= 1 and p <= 31536000 and b >= 1 and b <= 1000000000 then
        policy = { r, p, b }
      end
    end
    if not policy then
      table.insert(malformed, o)
      table.insert(malformed, string.sub(v, 1, 64))
    end
  end
  read[o] = policy
  return policy
end
local req, per, bur = {}, {}, {}
local cnt, enf = {}, {}
for i = 1, nb do
  local base = (i - 1) * 6
  req[i] = tonumber(ARG.policies[base + 1])
  per[i] = tonumber(ARG.policies[base + 2])
  bur[i] = tonumber(ARG.policies[base + 3])
  local o = tonumber(ARG.policies[base + 4])
  cnt[i] = math.max(1, tonumber(ARG.policies[base + 5]))
  enf[i] = ARG.policies[base + 6] == '1'
  if o > 0 then
    local policy = override(o)
    if policy == 'none' then
      req[i] = 0
    elseif policy then
      req[i], per[i], bur[i] = policy[1], policy[2], policy[3]
    end
  end
end
local out = {1, 0}
local tat, iv, tol = {}, {}, {}
for i = 1, nb do
  if req[i] > 0 then
    iv[i] = math.max(1, math.floor(per[i] * 1000000 / req[i] + 0.5))
    tol[i] = (bur[i] - 1) * iv[i]
    local stored = tonumber(redis.call('GET', KEY.buckets[i]) or '0')
    tat[i] = math.max(stored, now)
    if tat[i] - now > tol[i] and enf[i] then
      out[1] = 0
      out[2] = math.max(out[2], tat[i] - now - tol[i])
    end
  end
end
for i = 1, nb do
  local base = 2 + (i - 1) * 6
  if req[i] > 0 then
    local remaining, wait
    local granted = 0
    if out[1] == 1 and tat[i] - now <= tol[i] then
      local held = math.floor((tol[i] - (tat[i] - now)) / iv[i]) + 1
      granted = math.min(cnt[i], held)
      local n = tat[i] + granted * iv[i]
      redis.call('SET', KEY.buckets[i], string.format('%.0f', n), 'PX', math.ceil((n - now) / 1000))
      remaining = held - granted
      wait = n - now
    elseif tat[i] - now > tol[i] then
      remaining = 0
      wait = tat[i] - now - tol[i]
    else
      remaining = math.floor((tol[i] - (tat[i] - now)) / iv[i]) + 1
      wait = tat[i] - now
    end
    out[base + 1] = req[i]
    out[base + 2] = per[i]
    out[base + 3] = bur[i]
    out[base + 4] = math.max(0, remaining)
    out[base + 5] = string.format('%.0f', wait)
    out[base + 6] = granted
  else
    out[base + 1], out[base + 2], out[base + 3], out[base + 4], out[base + 5] = 0, 0, 0, 0, '0'
    out[base + 6] = 0
  end
end
out[2] = string.format('%.0f', out[2])
for _, m in ipairs(malformed) do table.insert(out, m) end
return out
