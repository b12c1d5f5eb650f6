--[[
  inspect: read the record of one key, with the server's time; writes nothing. For operators
  (the CLI's inspect and release), never on a delivery's path.

  Implements these rows of the transition table (docs/state-machine.md; in TypeScript,
  src/core/transitions.ts), named as there:
    absent  | inspect | —  → unchanged, nothing   [inspect.absent]
    claimed | inspect | —  → unchanged, the record  [inspect.found]
    done    | inspect | —  → unchanged, the record  [inspect.found]
  A record past its expiresAt is never seen here: PEXPIREAT deleted it at that moment.

  Input:
    KEYS[1]  the record's key (prefix + idempotency key); the only key touched

  Output:
    {now}                                                  no record
    {now, state, fencingId, leaseExpiresAt, expiresAt, name, value, ...}  the record, then
        the pairs 'fingerprint', fp and 'result', result, each only when stored
  now is the server's clock (TIME) in epoch ms; every number is an integer below 2^53. A name
  marks each field, so a stored empty result ('') is told from none.

  Uses now_ms() from prelude.lua, which scripts.ts prepends.
]]

local key = KEYS[1]
local now = now_ms()

local r = redis.call('HMGET', key, 'state', 'fencingId', 'leaseExpiresAt', 'expiresAt',
  'fingerprint', 'result')
if not r[1] then
  return {now}
end
local reply = {now, r[1], tonumber(r[2]), tonumber(r[3]), tonumber(r[4])}
local n = 5
if r[5] then reply[n + 1] = 'fingerprint'; reply[n + 2] = r[5]; n = n + 2 end
if r[6] then reply[n + 1] = 'result'; reply[n + 2] = r[6] end
return reply
