-- Delete up to {{purgeBatch}} records whose expires_at has passed; the caller loops until a
-- batch comes back short. SKIP LOCKED keeps a purge from queueing behind live claims.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in. Returns no rows
-- (read the row count).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   purge.expired (deleted), purge.kept (left alone).
DELETE FROM {{table}} WHERE "key" IN (
  SELECT "key" FROM {{table}}
  WHERE expires_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
  LIMIT {{purgeBatch}}
  FOR UPDATE SKIP LOCKED
)
