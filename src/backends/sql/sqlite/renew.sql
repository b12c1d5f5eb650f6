-- Renew a live claim. ?1 key, ?2 fencing id, ?3 lease ms, ?4 ttl ms. Read changes (1 or 0).
UPDATE {{table}} SET
  lease_expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?3,
  expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?3 + ?4
WHERE "key" = ?1 AND fencing_id = ?2 AND state = 'claimed' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
