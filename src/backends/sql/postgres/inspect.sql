-- Read the record of one key with the server's time; writes nothing. For operators (the CLI's
-- inspect and release), never on a delivery's path.
-- $1 key (text). Returns one row: now, and state, fencing_id, lease_expires_at, expires_at,
-- fingerprint, result (all null when there is no record; the last two also when the record
-- has none). A record past its expires_at is returned as stored.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   inspect.found (the record and now), inspect.absent (now only).
SELECT n.now, r.state, r.fencing_id, r.lease_expires_at, r.expires_at, r.fingerprint, r.result
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
LEFT JOIN {{table}} AS r ON r."key" = $1::text
