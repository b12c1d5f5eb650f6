-- Release a claim: the lease ends now and the fence rises, so it can never complete later.
-- $1 key (text), $2 fencing id (bigint), $3 ttl ms (bigint). Returns no rows.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   release.claimed (lease ends now, fence + 1), release.fenced (no-op; a done record too);
--   with the fence an operator saw, forceRelease.claimed (SqlLock.forceRelease counts the row
--   it changed, and reads the record with inspect.sql to tell why when none). The fingerprint
--   stays (the next win replaces it).
UPDATE {{table}} AS r SET
  fencing_id = r.fencing_id + 1,
  lease_expires_at = n.now,
  expires_at = n.now + $3::bigint
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
WHERE r."key" = $1::text AND r.fencing_id = $2::bigint AND r.state = 'claimed'
  AND r.expires_at > n.now
