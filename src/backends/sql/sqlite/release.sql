-- Release a claim: the lease ends now and the fence rises. ?1 key, ?2 fencing id, ?3 ttl ms.
UPDATE {{table}} SET
  fencing_id = fencing_id + 1,
  lease_expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?3
WHERE "key" = ?1 AND fencing_id = ?2 AND state = 'claimed' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
