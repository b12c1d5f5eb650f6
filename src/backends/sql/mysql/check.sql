-- Does a live record with this fence exist in the given state?
-- ? key (bytes), ? fencing id, ? state. Returns one row (ok) or none.
SELECT 1 AS ok FROM {{table}}
WHERE `key` = ? AND fencing_id = ? AND state = ?
  AND expires_at > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
