-- Release a claim: the lease ends now and the fence rises.
-- ? ttl ms, ? key (bytes), ? fencing id. Returns affectedRows.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   release.claimed (lease ends now, fence + 1), release.fenced (no-op; a done record too);
--   with the fence an operator saw, forceRelease.claimed (SqlLock.forceRelease counts the row
--   it changed, and reads the record with inspect.sql to tell why when none). The fingerprint
--   stays (the next win replaces it).
UPDATE {{table}} SET
  fencing_id = fencing_id + 1,
  lease_expires_at = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000),
  expires_at = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?
WHERE `key` = ? AND fencing_id = ? AND state = 'claimed'
  AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
