-- The portal's sessions under one tag (layout.ts sessionsAt): a HASH from the SHA-256 of a
-- session's id to the session as JSON (credentials/portal-session.ts). The functions the
-- session scripts and the user scripts share.

-- Deletes from `sessions` every session whose JSON does not read, whose `endsAtMs` is at or
-- before `nowMs` (when given), or whose `username` is `username` (when given).
local function drop_sessions(sessions, username, nowMs)
  local all = redis.call('HGETALL', sessions)
  for i = 1, #all, 2 do
    local ok, session = pcall(cjson.decode, all[i + 1])
    local ends = ok and type(session) == 'table' and tonumber(session.endsAtMs) or nil
    if ends == nil
      or (nowMs ~= nil and ends <= nowMs)
      or (username ~= nil and session.username == username) then
      redis.call('HDEL', sessions, all[i])
    end
  end
end
