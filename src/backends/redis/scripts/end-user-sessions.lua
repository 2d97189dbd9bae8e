-- Ends every portal session of ARG.username in KEY.sessions (a user of the single-slot
-- layout, whose hash is in another slot: see user-records.ts). Always 1.
drop_sessions(KEY.sessions, ARG.username, nil)
return 1
