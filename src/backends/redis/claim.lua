-- claim: create, reclaim, or report the record of one key (DESIGN.md §2, the claim rows).
--
-- KEYS[1]  the record's key (prefix + idempotency key); the only key touched, so Cluster-safe
-- ARGV[1]  leaseMs  the lease to grant, whole milliseconds
-- ARGV[2]  ttlMs    how long a done record suppresses duplicates, whole milliseconds
-- ARGV[3]  token    a random per-claim token, stored with the record
--
-- Returns  {'won', fencingId, leaseExpiresAt}   the key is ours
--          {'held', fencingId, leaseExpiresAt}  a live holder owns it until leaseExpiresAt
--          {'done', fencingId, expiresAt}       completed within its ttl
-- Every number is an integer epoch ms or counter below 2^53, so the reply is exact.
--
-- The record is a hash: state, fencingId, leaseExpiresAt, expiresAt, token.

-- Format as a plain integer string: tostring() switches to exponent form above 1e14.
local function int(n)
  return string.format('%.0f', n)
end

local key = KEYS[1]
local leaseMs = tonumber(ARGV[1])
local ttlMs = tonumber(ARGV[2])
local token = ARGV[3]

-- Server time, so every client is judged by one clock.
-- Redis 3.2-4 need effects replication before a write may follow TIME; a no-op since 5.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local r = redis.call('HMGET', key, 'state', 'fencingId', 'leaseExpiresAt', 'expiresAt')
local fence = 1
if r[1] then
  local fencingId = tonumber(r[2])
  if r[1] == 'done' then
    local expiresAt = tonumber(r[4])
    if now < expiresAt then
      return {'done', fencingId, expiresAt}
    end
  else
    local leaseExpiresAt = tonumber(r[3])
    if now < leaseExpiresAt then
      return {'held', fencingId, leaseExpiresAt}
    end
  end
  -- A lapsed lease or ttl: reclaim; the fence rises because the record still exists.
  fence = fencingId + 1
end

local leaseExpiresAt = now + leaseMs
-- A claimed record outlives any holder that could still be alive, keeping the fence meaningful.
local expiresAt = leaseExpiresAt + ttlMs
redis.call('HSET', key,
  'state', 'claimed',
  'fencingId', int(fence),
  'leaseExpiresAt', int(leaseExpiresAt),
  'expiresAt', int(expiresAt),
  'token', token)
redis.call('PEXPIREAT', key, int(expiresAt))
return {'won', fence, leaseExpiresAt}
