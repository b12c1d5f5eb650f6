-- renew: extend a claim whose fence still matches (DESIGN.md §2, the renew rows).
--
-- KEYS[1]  the record's key (prefix + idempotency key); the only key touched
-- ARGV[1]  fencingId  the claim's fence, an integer
-- ARGV[2]  leaseMs    the new lease, counted from now, whole milliseconds
-- ARGV[3]  ttlMs      the record's life after the new lease ends, whole milliseconds
--
-- Returns  {1, leaseExpiresAt}  renewed until leaseExpiresAt (integer epoch ms)
--          {0, 0}               fenced out: no record, a stale fence, a done record, or expired

local function int(n)
  return string.format('%.0f', n)
end

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local leaseMs = tonumber(ARGV[2])
local ttlMs = tonumber(ARGV[3])

-- Redis 3.2-4 need effects replication before a write may follow TIME; a no-op since 5.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local r = redis.call('HMGET', key, 'state', 'fencingId', 'expiresAt')
if r[1] ~= 'claimed' or tonumber(r[2]) ~= fencingId or now >= tonumber(r[3]) then
  return {0, 0}
end

local leaseExpiresAt = now + leaseMs
local expiresAt = leaseExpiresAt + ttlMs
redis.call('HSET', key,
  'leaseExpiresAt', int(leaseExpiresAt),
  'expiresAt', int(expiresAt))
redis.call('PEXPIREAT', key, int(expiresAt))
return {1, leaseExpiresAt}
