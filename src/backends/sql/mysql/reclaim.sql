-- Reclaim a lapsed or expired record that peek.sql read: compare-and-set on its fence.
-- ? lease_expires_at (peek's now + lease), ? expires_at (that + ttl), ? this claim's random
-- token, ? its fingerprint (null when none), ? key (bytes), ? the fence peek read. Returns
-- affectedRows: 1 won at that fence + 1 with exactly these values (the result cleared); 0 the
-- record moved on since the read (claim.sql then decides).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.lapsed and claim.expired (won, fence + 1, the fingerprint given replacing the stored
--   one, no result). Every claim and release raises the fence;
--   a complete or renew of the same fence makes the record live again, which the reclaimable
--   test at this statement's own time refuses; a purge and a fresh insert start at a higher
--   fence. So the row changes only if it is still the record peek read, still reclaimable.
UPDATE {{table}} SET
  fencing_id = fencing_id + 1,
  state = 'claimed',
  lease_expires_at = ?,
  expires_at = ?,
  token = ?,
  fingerprint = ?,
  result = NULL
WHERE `key` = ? AND fencing_id = ?
  AND IF(state = 'done', expires_at, lease_expires_at)
    <= (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
