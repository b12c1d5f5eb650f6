--[[
  complete: claimed → done when the fence matches, with the result, when given, in the same write.
  No lease guard: until someone reclaims, a lapsed holder is still the only one that ran the work.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    claimed | complete | fence matches (no lease guard)      → done, expiresAt = now + ttl, result, true
                                                                                [complete.claimed]
    claimed | complete | fence stale                         → unchanged, false  [complete.fenced]
    done    | complete | fence matches (a retried complete)  → done, true        [complete.retried]
    done    | complete | fence stale                         → done, false       [complete.fenced]
  Only complete.claimed writes, and the result with it: a retried or fenced complete writes no
  result. A claimed record keeps no result (every win in claim.lua deletes it), so a complete
  without one leaves none.

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched
    ARGV[1]  fencingId  the claim's fence, an integer
    ARGV[2]  ttlMs      how long the done record suppresses duplicates, whole milliseconds
    ARGV[3]  result     optional: once()'s encoded result, written with state done in this call,
                        as given; absent: none (index.ts sends the 2 arguments of before). Present,
                        even empty, it is a result: "" is one.

  Output:
    1  done (now, or already: a retried complete with a matching fence)
    0  fenced out: no record, a newer fence, or a record past its expiry

  Uses now_ms() and fenced_state() from prelude.lua, which scripts.ts prepends.
]]

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local now = now_ms()

local state = fenced_state(key, fencingId, now)
if not state then
  return 0
end
if state == 'done' then
  return 1
end

local expiresAt = now + ARGV[2]
if ARGV[3] then
  redis.call('HSET', key, 'state', 'done', 'expiresAt', expiresAt, 'result', ARGV[3])
else
  redis.call('HSET', key, 'state', 'done', 'expiresAt', expiresAt)
end
redis.call('PEXPIREAT', key, expiresAt)
return 1
