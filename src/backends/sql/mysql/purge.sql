-- Delete up to {{purgeBatch}} expired records; the caller loops while batches are full.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in (a bound LIMIT
-- is refused by some MySQL versions). Returns affectedRows.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   purge.expired (deleted), purge.kept (left alone).
DELETE FROM {{table}} WHERE expires_at <= (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) LIMIT {{purgeBatch}}
