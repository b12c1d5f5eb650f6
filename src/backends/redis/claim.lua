--[[
  claim: create, reclaim, or report the record of one key.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    absent  | claim | —                     → claimed, won, fence = now in µs      [claim.absent]
    claimed | claim | now < leaseExpiresAt  → held (+ the stored fingerprint)      [claim.held]
    claimed | claim | now ≥ leaseExpiresAt  → claimed (new token), won, fence + 1  [claim.lapsed]
    done    | claim | now < expiresAt       → done (+ stored fingerprint, result)  [claim.done]
    done    | claim | now ≥ expiresAt       → claimed, won, fence + 1              [claim.expired]
    claimed | claim | the record bears this call's token (a retry whose write landed) → won,
                                            unchanged                              [claim.own]
  claim.own: ioredis resends a command left unanswered when its connection dropped
  (autoResendUnfulfilledCommands, on by default), so a claim whose reply was lost runs again
  with the same token; without this row it met its own win as held, for a whole lease.
  Every win (absent, lapsed, expired) stores this call's fingerprint, or none (an earlier one is
  deleted), and deletes any stored result (docs/state-machine.md, the record's fields). A held
  or done answer writes nothing.
  purge.expired is Redis's own: every write sets PEXPIREAT at the record's expiresAt.

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched, so Cluster-safe
    ARGV[1]  leaseMs      the lease to grant, whole milliseconds
    ARGV[2]  ttlMs        how long a done record suppresses duplicates, whole milliseconds
    ARGV[3]  token        a random per-claim token, stored with the record
    ARGV[4]  fingerprint  optional: stored with the record this call wins; absent or empty:
                          none (index.ts sends the 3 arguments of before when there is none)

  Output. A record without a fingerprint or result answers in integers only, so the common
  path parses no string and the two refusals no array:
    {fencingId, leaseExpiresAt}          won: the key is ours
    leaseExpiresAt                       held: a live holder owns it until then (epoch ms > 0)
    0                                    done: completed within its ttl
    result                               done, with a non-empty result and no fingerprint:
                                         the stored text alone, the one string reply, so
                                         once()'s common duplicate builds and parses no array
    {'held', leaseExpiresAt, fingerprint}  held, by a holder whose claim stored a fingerprint
    {'done', name, value, ...}           done, otherwise: the pairs 'fingerprint', fp and
                                         'result', result, each only when stored
  Every number is an integer epoch ms, or a fence near epoch µs, below 2^53: the reply is exact.
  One HMGET reads every field. Only a done record has a result, so a result is read for nothing
  only between a done record's expiresAt and its deletion by PEXPIREAT, and goes back as stored.
  One TIME call; no table is built but the reply.

  A new record's fence is the server's clock in µs, so it starts above every fence an earlier,
  deleted record of the key reached (each claim or release adds 1; a record lives at least its
  ttl, so it would need more than one step per µs of its life to catch up), unless the server's
  clock steps back by more than the ttl.

  The record is a hash: state, fencingId, leaseExpiresAt, expiresAt, token, and when there are
  any, fingerprint and result (once()'s encoded result, written by complete.lua).
  Uses now_ms_us() from prelude.lua, which scripts.ts prepends.
]]
local key = KEYS[1]
local token = ARGV[3]
local now, us = now_ms_us()

local r = redis.call('HMGET', key, 'state', 'fencingId', 'leaseExpiresAt', 'expiresAt',
  'fingerprint', 'result', 'token')
local state = r[1]
local fence = us
if state then
  if state == 'done' then
    if now < tonumber(r[4]) then
      local stored, result = r[5], r[6]
      if not stored then
        if not result then
          return 0
        end
        if result ~= '' then
          return result
        end
        return {'done', 'result', result}
      end
      if result then
        return {'done', 'fingerprint', stored, 'result', result}
      end
      return {'done', 'fingerprint', stored}
    end
  elseif r[7] == token then
    return {tonumber(r[2]), tonumber(r[3])}
  else
    local leaseExpiresAt = tonumber(r[3])
    if now < leaseExpiresAt then
      if r[5] then
        return {'held', leaseExpiresAt, r[5]}
      end
      return leaseExpiresAt
    end
  end
  -- A lapsed lease or ttl: reclaim; the fence rises because the record still exists.
  fence = tonumber(r[2]) + 1
end

local fingerprint = ARGV[4]
if fingerprint == '' then
  fingerprint = nil
end
local leaseExpiresAt = now + ARGV[1]
-- A claimed record outlives any holder that could still be alive, keeping the fence meaningful.
local expiresAt = leaseExpiresAt + ARGV[2]
-- A win never keeps an earlier run's result, nor an earlier claim's fingerprint this call does
-- not replace; a new record has neither (r[5] and r[6] are false).
if r[6] or (r[5] and not fingerprint) then
  if fingerprint then
    redis.call('HDEL', key, 'result')
  else
    redis.call('HDEL', key, 'fingerprint', 'result')
  end
end
if fingerprint then
  redis.call('HSET', key, 'state', 'claimed', 'fencingId', fence,
    'leaseExpiresAt', leaseExpiresAt, 'expiresAt', expiresAt, 'token', token,
    'fingerprint', fingerprint)
else
  redis.call('HSET', key, 'state', 'claimed', 'fencingId', fence,
    'leaseExpiresAt', leaseExpiresAt, 'expiresAt', expiresAt, 'token', token)
end
redis.call('PEXPIREAT', key, expiresAt)
return {fence, leaseExpiresAt}
