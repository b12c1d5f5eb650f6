-- Claim a key: insert, or reclaim a lapsed record, in one statement (select.sql then
-- reads the outcome). Runs only when insert.sql or reclaim.sql changed no row (a record
-- appeared or moved on between peek.sql and that write): this upsert decides such a race.
-- ? key (bytes), ? lease ms, ? lease ms, ? ttl ms, ? this claim's random token, ? its
-- fingerprint (null when none), ? lease ms.
-- Returns affectedRows only; select.sql reads the outcome.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.absent (won, fence = the server's clock in epoch µs), claim.held, claim.lapsed
--   (won, fence + 1), claim.done, claim.expired (won, fence + 1); every win writes the
--   fingerprint given (null clears an earlier one) and clears result. claim.own needs no
--   statement: no claim is retried after a landed write, and the token in the row read back
--   tells who won.
-- ON DUPLICATE KEY UPDATE assigns left to right and later assignments see earlier ones, so
-- the token goes first: it equals the new token exactly when the record was reclaimable,
-- and the other columns key off it. Now is epoch ms from UTC_TIMESTAMP, so the session
-- time zone (and its DST folds) cannot shift it. A new record's fence is that clock in µs
-- (BIGINT, about 1.8e15): above every fence an earlier, deleted record of the key reached,
-- since each claim or release adds only 1 and a record lives at least its ttl, unless the
-- server's clock steps back by more than the ttl.
INSERT INTO {{table}} (`key`, state, fencing_id, lease_expires_at, expires_at, token, fingerprint)
VALUES (?, 'claimed', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)),
  (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?,
  (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ? + ?,
  ?, ?)
ON DUPLICATE KEY UPDATE
  token = IF(IF(state = 'done', expires_at, lease_expires_at) <= VALUES(lease_expires_at) - ?,
    VALUES(token), token),
  fencing_id = IF(token = VALUES(token), fencing_id + 1, fencing_id),
  state = IF(token = VALUES(token), 'claimed', state),
  lease_expires_at = IF(token = VALUES(token), VALUES(lease_expires_at), lease_expires_at),
  expires_at = IF(token = VALUES(token), VALUES(expires_at), expires_at),
  fingerprint = IF(token = VALUES(token), VALUES(fingerprint), fingerprint),
  result = IF(token = VALUES(token), NULL, result)
