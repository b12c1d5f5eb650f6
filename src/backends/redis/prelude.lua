-- prelude: the helpers every RedisLock script shares. index.ts prepends this file to claim.lua,
-- complete.lua, release.lua and renew.lua (and the operator calls inspect.lua and
-- forceRelease.lua) once, at module load; the SHA sent with EVALSHA is the SHA of that
-- assembled text, so each script stays self-contained on the server.
--
-- Defines (as locals of the script's chunk: 5 of Lua's 200, no globals)
--   int(n)    n as a plain integer string ('%.0f'); tostring() switches to exponent form above
--             1e14. Lua numbers are doubles: every fence and epoch-ms time stays below 2^53.
--   now_us()  the server's clock in epoch µs, from TIME: seconds * 1000000 + µs (about 1.8e15,
--             exact in a double). A new record's first fence (claim.lua).
--   now_ms()  the same clock in epoch ms, floor(now_us() / 1000), so every client is judged by
--             one clock.
--   fenced_state(key, fencingId, now)
--             the record's state ('claimed' or 'done') when it exists, carries this fence and
--             is not past its expiresAt; nil otherwise. The guard every fenced call shares:
--             a stale fence or an expired record is never changed.
--   end_lease(key, fencingId, now, ttlMs)
--             the write of a release (release.lua, and an operator's forceRelease.lua): the
--             fence rises past fencingId, the lease ends now, the record lives ttlMs more.
--             The fingerprint stays as it is (a done record, the only one with a result, is
--             never released).
--
-- Also turns on effects replication first: Redis 3.2-4 refuse a write after TIME without it; a
-- no-op since 5, and the check skips it wherever the function is gone.

if redis.replicate_commands then redis.replicate_commands() end

local function int(n)
  return string.format('%.0f', n)
end

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function now_ms()
  return math.floor(now_us() / 1000)
end

local function fenced_state(key, fencingId, now)
  local r = redis.call('HMGET', key, 'state', 'fencingId', 'expiresAt')
  if not r[1] or tonumber(r[2]) ~= fencingId or now >= tonumber(r[3]) then
    return nil
  end
  return r[1]
end

local function end_lease(key, fencingId, now, ttlMs)
  local expiresAt = now + ttlMs
  redis.call('HSET', key,
    'fencingId', int(fencingId + 1),
    'leaseExpiresAt', int(now),
    'expiresAt', int(expiresAt))
  redis.call('PEXPIREAT', key, int(expiresAt))
end
