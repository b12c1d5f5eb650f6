-- Complete a claim: claimed → done (expires_at = now + ttl); a done row with the same fence
-- is left as it is. No lease guard.
-- ? ttl ms, ? key (bytes), ? fencing id. Read affectedRows: 1 completed; 0 means fenced out
-- or (without FOUND_ROWS) a retried complete, which check.sql tells apart.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   complete.claimed (done, true), complete.retried (true, unchanged), complete.fenced (false).
UPDATE {{table}} SET
  expires_at = IF(state = 'claimed', (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?, expires_at),
  state = 'done'
WHERE `key` = ? AND fencing_id = ? AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
