-- Renew a live claim: lease_expires_at = now + lease, expires_at = that + ttl.
-- ? lease ms, ? lease ms, ? ttl ms, ? key (bytes), ? fencing id. Returns affectedRows.
UPDATE {{table}} SET
  lease_expires_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?,
  expires_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ? + ?
WHERE `key` = ? AND fencing_id = ? AND state = 'claimed'
  AND expires_at > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
