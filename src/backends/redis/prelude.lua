-- prelude: the helpers every RedisLock script shares. index.ts prepends this file to claim.lua,
-- complete.lua, release.lua and renew.lua once, at module load; the SHA sent with EVALSHA is the
-- SHA of that assembled text, so the four scripts stay self-contained on the server.
--
-- Defines (as locals of the script's chunk: 2 of Lua's 200, no globals)
--   int(n)    n as a plain integer string ('%.0f'); tostring() switches to exponent form above
--             1e14. Lua numbers are doubles: every fence and epoch-ms time stays below 2^53.
--   now_ms()  the server's clock in epoch ms, from TIME: seconds * 1000 + floor(µs / 1000), so
--             every client is judged by one clock.
--
-- Also turns on effects replication first: Redis 3.2-4 refuse a write after TIME without it; a
-- no-op since 5, and the check skips it wherever the function is gone.

if redis.replicate_commands then redis.replicate_commands() end

local function int(n)
  return string.format('%.0f', n)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
