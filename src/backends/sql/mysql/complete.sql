-- Complete a claim: claimed → done (expires_at = now + ttl); a done row with the same fence
-- is left as it is. No lease guard.
-- ? ttl ms, ? key (bytes), ? fencing id. Read affectedRows: 1 completed; 0 means fenced out
-- or (without FOUND_ROWS) a retried complete, which check.sql tells apart.
UPDATE {{table}} SET
  expires_at = IF(state = 'claimed', CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?, expires_at),
  state = 'done'
WHERE `key` = ? AND fencing_id = ? AND expires_at > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
