-- Complete a claim: claimed → done (expires_at = now + ttl); a done row with the same fence
-- is left as it is. No lease guard.
-- ? ttl ms, ? key (bytes), ? fencing id. Read affectedRows: 1 completed; 0 means fenced out
-- or (without FOUND_ROWS) a retried complete, which check.sql tells apart.
-- Rows implemented (the state-machine table: docs/state-machine.md, DESIGN.md §2):
--   claimed → complete (fence matches: done, true; fence stale: false); done → complete (fence
--   matches: a retried complete, true; fence stale: false).
UPDATE {{table}} SET
  expires_at = IF(state = 'claimed', (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?, expires_at),
  state = 'done'
WHERE `key` = ? AND fencing_id = ? AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
