-- How many usable (active, unexpired) pairs the subject has: { 'done', count }.
wantUsable(false)
if missing then return need() end
return { 'done', usable(false) }
