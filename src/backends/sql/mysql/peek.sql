-- Read the record of a key and the server's time before claiming; writes nothing, locks nothing.
-- ? key (bytes). Returns one row: now (epoch ms), now_us (epoch µs, a fresh record's fence),
-- and state, fencing_id, lease_expires_at, expires_at, fingerprint, result (all null when there
-- is no record; the last two also when the record has none).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.held (answers the holder's fingerprint) and claim.done (answers the fingerprint and
--   result): a live record, answered from this read alone; for the other
--   claim rows it supplies what insert.sql (claim.absent) or reclaim.sql (claim.lapsed,
--   claim.expired) write.
-- A consistent read takes no row lock, so a duplicate or a contended claim is one round trip
-- that neither waits for a writer nor writes. The record can only have moved on to done,
-- renewed or released since this read, so the answer is that of a claim an instant earlier;
-- a win is only ever decided by a write.
SELECT n.now, n.now_us, r.state, r.fencing_id, r.lease_expires_at, r.expires_at, r.fingerprint,
  r.result
FROM (SELECT (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) AS now,
  TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us) AS n
LEFT JOIN {{table}} AS r ON r.`key` = ?
