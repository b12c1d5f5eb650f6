-- Claim a key in one statement.
-- $1 key (text), $2 lease ms (bigint), $3 ttl ms (bigint), $4 this claim's random token (text).
-- Returns one row: state, fencing_id, lease_expires_at, token. The claim was won iff
-- token = $4. The outcome is decided inside DO UPDATE, which sees the latest committed row
-- (not the statement's snapshot), so a lost race still answers done/held in this round trip.
-- DO UPDATE always fires (rewriting a held/done row unchanged) so RETURNING always has a row.
INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token)
SELECT $1::text, 'claimed', 1, n.now + $2::bigint, n.now + $2::bigint + $3::bigint, $4::text
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
ON CONFLICT ("key") DO UPDATE SET
  fencing_id = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - $2::bigint
    THEN r.fencing_id + 1 ELSE r.fencing_id END,
  state = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - $2::bigint
    THEN 'claimed' ELSE r.state END,
  lease_expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - $2::bigint
    THEN excluded.lease_expires_at ELSE r.lease_expires_at END,
  expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - $2::bigint
    THEN excluded.expires_at ELSE r.expires_at END,
  token = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - $2::bigint
    THEN excluded.token ELSE r.token END
RETURNING r.state, r.fencing_id, r.lease_expires_at, r.token
