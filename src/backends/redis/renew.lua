--[[
  renew: extend a claim whose fence still matches.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    claimed | renew | fence matches  → leaseExpiresAt = now + lease, true  [renew.claimed]
    claimed | renew | fence stale    → unchanged, false                    [renew.fenced]
    done    | renew | fence stale    → done, false                         [renew.fenced]
    done    | renew | fence matches  → done, false                         [renew.fenced]

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched
    ARGV[1]  fencingId  the claim's fence, an integer
    ARGV[2]  leaseMs    the new lease, counted from now, whole milliseconds
    ARGV[3]  ttlMs      the record's life after the new lease ends, whole milliseconds

  Output:
    1  renewed until now + leaseMs
    0  fenced out: no record, a stale fence, a done record, or expired

  Uses now_ms() and fenced_state() from prelude.lua, which scripts.ts prepends.
]]

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local now = now_ms()

if fenced_state(key, fencingId, now) ~= 'claimed' then
  return 0
end

local leaseExpiresAt = now + ARGV[2]
local expiresAt = leaseExpiresAt + ARGV[3]
redis.call('HSET', key,
  'leaseExpiresAt', leaseExpiresAt,
  'expiresAt', expiresAt)
redis.call('PEXPIREAT', key, expiresAt)
return 1
