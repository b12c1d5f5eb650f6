-- Renew a live claim: lease_expires_at = now + lease, expires_at = that + ttl.
-- @key key, @fence fencing id, @lease lease ms, @ttl ttl ms. Read changes (1 renewed, 0 not).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   renew.claimed (true), renew.fenced (false; a done record too). The fingerprint stays.
UPDATE {{table}} SET
  lease_expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @lease,
  expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @lease + @ttl
WHERE "key" = @key AND fencing_id = @fence AND state = 'claimed' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
