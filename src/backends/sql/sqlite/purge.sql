-- Delete up to {{purgeBatch}} expired records; the caller loops while batches are full.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in. Read changes.
-- Rows implemented (the state-machine table: docs/state-machine.md, DESIGN.md §2):
--   none: the deletion after expiresAt described under the table (a later claim starts again at
--   fence 1).
DELETE FROM {{table}} WHERE rowid IN (
  SELECT rowid FROM {{table}} WHERE expires_at <= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) LIMIT {{purgeBatch}}
)
