-- Upgrade a PostgreSQL table made by gcp-pubsub-idempotency 0.1: add the nullable columns
-- fingerprint and result (once(), step(), fingerprints). {{table}} is the validated table.
-- No parameters, no result. Safe to run again (IF NOT EXISTS, PostgreSQL 9.6+). Adding a
-- nullable column without a default rewrites nothing, but ALTER TABLE takes the table's
-- ACCESS EXCLUSIVE lock for that instant: it waits for open transactions on the table (a long
-- lockInTransaction body) and claims queue behind it. ensureSchema() runs it only when
-- columns.sql finds a column missing.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: records written before it read as records without a fingerprint or result.
ALTER TABLE {{table}}
  ADD COLUMN IF NOT EXISTS fingerprint text,
  ADD COLUMN IF NOT EXISTS result text;
