-- Claim a key in one statement (an upsert holds the write lock for its whole run); runs
-- only when peek.sql found no live record.
-- @key key, @lease lease ms, @ttl ttl ms, @token this claim's random token.
-- Returns one row: state, fencing_id, lease_expires_at, token; won iff token = @token.
-- Rows implemented (the state-machine table: docs/state-machine.md, DESIGN.md §2):
--   absent → claim (won, fence 1); claimed → claim (lease live: held; lease lapsed: won, fence
--   + 1); done → claim (within ttl: done; after it: won, fence + 1).
-- DO UPDATE always fires so RETURNING always has the row; SET reads the old values.
INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token)
SELECT @key, 'claimed', 1, n.now + @lease, n.now + @lease + @ttl, @token
FROM (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS now) AS n
WHERE true
ON CONFLICT ("key") DO UPDATE SET
  fencing_id = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN r.fencing_id + 1 ELSE r.fencing_id END,
  state = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN 'claimed' ELSE r.state END,
  lease_expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.lease_expires_at ELSE r.lease_expires_at END,
  expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.expires_at ELSE r.expires_at END,
  token = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.token ELSE r.token END
RETURNING state, fencing_id, lease_expires_at, token
