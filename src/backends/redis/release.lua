-- release: abandon a claim (DESIGN.md §2, the release rows). The lease ends now and the fence
-- rises, so the released claim can never complete later; the record itself stays.
--
-- KEYS[1]  the record's key (prefix + idempotency key); the only key touched
-- ARGV[1]  fencingId  the claim's fence, an integer
-- ARGV[2]  ttlMs      the record's remaining life after release, whole milliseconds
--
-- Returns  1  released
--          0  no-op: no record, a stale fence, a done record, or a record past its expiry

local function int(n)
  return string.format('%.0f', n)
end

local key = KEYS[1]
local fencingId = tonumber(ARGV[1])
local ttlMs = tonumber(ARGV[2])

-- Redis 3.2-4 need effects replication before a write may follow TIME; a no-op since 5.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local r = redis.call('HMGET', key, 'state', 'fencingId', 'expiresAt')
if r[1] ~= 'claimed' or tonumber(r[2]) ~= fencingId or now >= tonumber(r[3]) then
  return 0
end

local expiresAt = now + ttlMs
redis.call('HSET', key,
  'fencingId', int(fencingId + 1),
  'leaseExpiresAt', int(now),
  'expiresAt', int(expiresAt))
redis.call('PEXPIREAT', key, int(expiresAt))
return 1
