-- Does a live record with this fence exist in the given state?
-- ? key (bytes), ? fencing id, ? state. Returns one row (ok) or none.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   complete.retried (a retried complete that changed nothing: true) and renew.claimed
--   (renewed within the same millisecond, nothing changed: true), asked after complete.sql or
--   renew.sql changed no row.
SELECT 1 AS ok FROM {{table}}
WHERE `key` = ? AND fencing_id = ? AND state = ?
  AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
