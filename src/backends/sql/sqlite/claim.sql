-- Claim a key in one statement (an upsert holds the write lock for its whole run).
-- ?1 key, ?2 lease ms, ?3 ttl ms, ?4 this claim's random token.
-- Returns one row: state, fencing_id, lease_expires_at, token; won iff token = ?4.
-- DO UPDATE always fires so RETURNING always has the row; SET reads the old values.
INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token)
SELECT ?1, 'claimed', 1, n.now + ?2, n.now + ?2 + ?3, ?4
FROM (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS now) AS n
WHERE true
ON CONFLICT ("key") DO UPDATE SET
  fencing_id = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - ?2
    THEN r.fencing_id + 1 ELSE r.fencing_id END,
  state = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - ?2
    THEN 'claimed' ELSE r.state END,
  lease_expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - ?2
    THEN excluded.lease_expires_at ELSE r.lease_expires_at END,
  expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - ?2
    THEN excluded.expires_at ELSE r.expires_at END,
  token = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - ?2
    THEN excluded.token ELSE r.token END
RETURNING state, fencing_id, lease_expires_at, token
