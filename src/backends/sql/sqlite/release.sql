-- Release a claim: the lease ends now and the fence rises.
-- @key key, @fence fencing id, @ttl ttl ms. Read changes (1 released, 0 no-op).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   release.claimed (lease ends now, fence + 1), release.fenced (no-op; a done record too);
--   with the fence an operator saw, forceRelease.claimed (SqlLock.forceRelease counts the row
--   it changed, and reads the record with inspect.sql to tell why when none). The fingerprint
--   stays (the next win replaces it).
UPDATE {{table}} SET
  fencing_id = fencing_id + 1,
  lease_expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @ttl
WHERE "key" = @key AND fencing_id = @fence AND state = 'claimed' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
