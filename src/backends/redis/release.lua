--[[
  release: abandon a claim. The lease ends now and the fence rises, so the released claim can
  never complete later; the record itself stays.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    claimed | release | fence matches  → claimed, leaseExpiresAt = now, fence + 1  [release.claimed]
    claimed | release | fence stale    → unchanged, no-op                          [release.fenced]
    done    | release | fence stale    → done, no-op                               [release.fenced]
    done    | release | fence matches  → done, no-op                               [release.fenced]

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched
    ARGV[1]  fencingId  the claim's fence, an integer
    ARGV[2]  ttlMs      the record's remaining life after release, whole milliseconds

  Output:
    1  released
    0  no-op: no record, a stale fence, a done record, or a record past its expiry

  Uses now_ms(), fenced_state() and end_lease() from prelude.lua, which scripts.ts prepends.
]]

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local now = now_ms()

if fenced_state(key, fencingId, now) ~= 'claimed' then
  return 0
end

end_lease(key, fencingId, now, ARGV[2])
return 1
