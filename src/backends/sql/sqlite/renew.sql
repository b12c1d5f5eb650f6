-- Renew a live claim. @key key, @fence fencing id, @lease lease ms, @ttl ttl ms. Read changes (1 or 0).
UPDATE {{table}} SET
  lease_expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @lease,
  expires_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @lease + @ttl
WHERE "key" = @key AND fencing_id = @fence AND state = 'claimed' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
