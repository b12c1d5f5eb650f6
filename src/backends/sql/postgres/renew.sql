-- Renew a live claim: lease_expires_at = now + lease, expires_at = that + ttl.
-- $1 key (text), $2 fencing id (bigint), $3 lease ms (bigint), $4 ttl ms (bigint).
-- Returns one row (ok) when renewed, none when fenced out or done.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   renew.claimed (true), renew.fenced (false; a done record too). The fingerprint stays.
UPDATE {{table}} AS r SET
  lease_expires_at = n.now + $3::bigint,
  expires_at = n.now + $3::bigint + $4::bigint
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
WHERE r."key" = $1::text AND r.fencing_id = $2::bigint AND r.state = 'claimed'
  AND r.expires_at > n.now
RETURNING 1 AS ok
