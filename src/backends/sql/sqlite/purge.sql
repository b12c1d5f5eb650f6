-- Delete up to @limit expired records; the caller loops while batches are full. Read changes.
DELETE FROM {{table}} WHERE rowid IN (
  SELECT rowid FROM {{table}} WHERE expires_at <= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) LIMIT @limit
)
