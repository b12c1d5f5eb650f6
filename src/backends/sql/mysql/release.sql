-- Release a claim: the lease ends now and the fence rises.
-- ? ttl ms, ? key (bytes), ? fencing id. Returns affectedRows.
UPDATE {{table}} SET
  fencing_id = fencing_id + 1,
  lease_expires_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
  expires_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?
WHERE `key` = ? AND fencing_id = ? AND state = 'claimed'
  AND expires_at > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
