-- Delete up to {{purgeBatch}} records whose expires_at has passed; the caller loops until a
-- batch comes back short. SKIP LOCKED keeps a purge from queueing behind live claims.
-- No parameters: {{purgeBatch}} is SqlLock's PURGE_BATCH, templated in. Returns no rows
-- (read the row count).
-- Rows implemented (the state-machine table: docs/state-machine.md, DESIGN.md §2):
--   none: the deletion after expiresAt described under the table (a later claim starts again at
--   fence 1).
DELETE FROM {{table}} WHERE "key" IN (
  SELECT "key" FROM {{table}}
  WHERE expires_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
  LIMIT {{purgeBatch}}
  FOR UPDATE SKIP LOCKED
)
