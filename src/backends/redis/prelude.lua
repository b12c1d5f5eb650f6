-- prelude: the helpers the RedisLock scripts share, one `local function` each. scripts.ts
-- builds each script once, at module load: the helpers its own file calls (and those they
-- call), in this file's order, then the file; a script calls no helper it does not carry, so
-- a run defines only what it uses. The SHA sent with EVALSHA is that of the assembled text, so
-- each script stays self-contained on the server.
--
-- Helpers (locals of the script's chunk, no globals)
--   now_ms()  the server's clock in epoch ms, from TIME: seconds * 1000 + floor(µs / 1000), so
--             every client is judged by one clock.
--   now_ms_us()
--             the same, and the same instant in epoch µs (about 1.8e15, exact in a double):
--             a new record's first fence (claim.lua).
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
-- Numbers go to redis.call as Lua numbers: Redis writes a number argument with '%.17g' (7.2
-- and later: as an integer when it is one), exact for every integer below 2^53, which every
-- fence and epoch-ms time stays under; tostring() would switch to exponent form above 1e14.
--
-- Effects replication: Redis 5 and later replicate a script by its effects, so a write after
-- TIME is allowed. Redis 4 (and 5 or 6 with lua-replicate-commands off) refuses it until the
-- script calls redis.replicate_commands(); adapter.ts then runs the script's legacy text,
-- this line followed by the script, from that answer on (scripts.ts, legacy).
--
-- legacy:
redis.replicate_commands()

local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

local function now_ms_us()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000), t[1] * 1000000 + t[2]
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
  redis.call('HSET', key, 'fencingId', fencingId + 1, 'leaseExpiresAt', now,
    'expiresAt', expiresAt)
  redis.call('PEXPIREAT', key, expiresAt)
end
