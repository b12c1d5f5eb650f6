-- Delete up to {{purgeBatch}} expired records; the caller loops while batches are full.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in. Read changes.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   purge.expired (deleted), purge.kept (left alone).
DELETE FROM {{table}} WHERE rowid IN (
  SELECT rowid FROM {{table}} WHERE expires_at <= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) LIMIT {{purgeBatch}}
)
