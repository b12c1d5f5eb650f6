-- complete: claimed → done when the fence matches (DESIGN.md §2, the complete rows).
-- No lease guard: until someone reclaims, a lapsed holder is still the only one that ran the work.
--
-- KEYS[1]  the record's key (prefix + idempotency key); the only key touched
-- ARGV[1]  fencingId  the claim's fence, an integer
-- ARGV[2]  ttlMs      how long the done record suppresses duplicates, whole milliseconds
--
-- Returns  1  done (now, or already: a retried complete with a matching fence)
--          0  fenced out: no record, a newer fence, or a record past its expiry

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
if not r[1] or tonumber(r[2]) ~= fencingId or now >= tonumber(r[3]) then
  return 0
end
if r[1] == 'done' then
  return 1
end

local expiresAt = now + ttlMs
redis.call('HSET', key, 'state', 'done', 'expiresAt', int(expiresAt))
redis.call('PEXPIREAT', key, int(expiresAt))
return 1
