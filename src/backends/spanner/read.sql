-- Read the record of one key and Spanner's clock, inside a read-write transaction: the read
-- locks the row (or the key's absence) until the commit, so the write that follows is decided
-- on what is still there.
-- @key the record's id (STRING): the key's spread id, or the key itself under recordIds
-- "plain" (0.1's ids).
-- Returns one row: now (epoch ms, CURRENT_TIMESTAMP()), and state, fencing_id,
-- lease_expires_at, expires_at (epoch ms), token, fingerprint, result, all null when there is
-- no record (fingerprint and result are also null in a record without them).
-- Rows of the transition table: none by itself; every call decides on this read with the
-- pure functions of src/core/transitions.ts (claim.*, complete.*, release.*, renew.*,
-- inspect.*, forceRelease.*): claim.done answers fingerprint and result, claim.held the
-- fingerprint, inspect.found both.
SELECT UNIX_MILLIS(CURRENT_TIMESTAMP()) AS now, r.state, r.fencing_id, r.lease_expires_at,
  UNIX_MILLIS(r.expires_at) AS expires_at, r.token, r.fingerprint, r.result
FROM (SELECT 1 AS one) AS o
LEFT JOIN {{table}} AS r ON r.key = @key
