-- Complete a claim: claimed → done (expires_at = now + ttl) with its result, in this one
-- statement; a done row with the same fence is left as it is (its result too). No lease guard.
-- SET assigns left to right, each seeing the earlier ones: state changes last.
-- ? ttl ms, ? the encoded result (null when none), ? key (bytes), ? fencing id. Read
-- affectedRows: 1 completed; 0 means fenced out or (without FOUND_ROWS) a retried complete,
-- which check.sql tells apart.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   complete.claimed (done with the result, true), complete.retried (true, unchanged),
--   complete.fenced (false). The fingerprint stays as the claim wrote it.
UPDATE {{table}} SET
  expires_at = IF(state = 'claimed', (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?, expires_at),
  result = IF(state = 'claimed', ?, result),
  state = 'done'
WHERE `key` = ? AND fencing_id = ? AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
