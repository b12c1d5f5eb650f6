-- Delete up to {{purgeBatch}} expired records; the caller loops while batches are full.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in (a bound LIMIT
-- is refused by some MySQL versions). Returns affectedRows.
-- Rows implemented (the state-machine table: docs/state-machine.md, DESIGN.md §2):
--   none: the deletion after expiresAt described under the table (a later claim starts again at
--   fence 1).
DELETE FROM {{table}} WHERE expires_at <= (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) LIMIT {{purgeBatch}}
