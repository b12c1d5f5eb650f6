--[[
  forceRelease: an operator frees a stuck claim. What release does for its holder, guarded by
  the fence the operator saw (inspect), so a claim that moved on since is left alone. The lease
  ends now and the fence rises: the next claim wins at fence + 2, and the old holder, should it
  still run, is fenced out. A done record is never touched.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    claimed | forceRelease | fence is the one given  → claimed, leaseExpiresAt = now, expiresAt = now + ttl, released  [forceRelease.claimed]
    claimed | forceRelease | fence is another        → unchanged, changed  [forceRelease.changed]
    done    | forceRelease | —                       → unchanged, done     [forceRelease.done]
    absent  | forceRelease | —                       → absent, absent      [forceRelease.absent]
  A record past its expiresAt counts as absent; PEXPIREAT has deleted it by then anyway.

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched
    ARGV[1]  fencingId  the fence the operator saw, an integer
    ARGV[2]  ttlMs      the record's remaining life after the release, whole milliseconds

  Output:
    {'released', fencingId + 1}   freed; the record's new fence
    {'changed', fencingId}        the record's fence is another: left alone
    {'done', fencingId}           a done record: left alone
    {'absent', 0}                 no record

  Uses now_ms() and end_lease() from prelude.lua, which scripts.ts prepends.
]]

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local now = now_ms()

local r = redis.call('HMGET', key, 'state', 'fencingId', 'expiresAt')
if not r[1] or now >= tonumber(r[3]) then
  return {'absent', 0}
end
local current = tonumber(r[2])
if r[1] == 'done' then
  return {'done', current}
end
if current ~= fencingId then
  return {'changed', current}
end

end_lease(key, fencingId, now, ARGV[2])
return {'released', fencingId + 1}
