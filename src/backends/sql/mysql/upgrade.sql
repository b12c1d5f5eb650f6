-- Upgrade a MySQL/MariaDB table made by gcp-pubsub-idempotency 0.1: add the nullable columns
-- fingerprint and result (once(), step(), fingerprints). {{table}} is the validated table.
-- No parameters, no result. One statement, so both columns land together; running it again
-- fails with "Duplicate column name" (MySQL 8 has no ADD COLUMN IF NOT EXISTS; MariaDB 10.0+
-- does, should you want it). MySQL 8.0.12+ and MariaDB 10.3+ add such trailing nullable
-- columns in place (instantly), without copying the table. ensureSchema() runs it only when
-- columns.sql finds a column missing.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: records written before it read as records without a fingerprint or result.
ALTER TABLE {{table}}
  ADD COLUMN fingerprint TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  ADD COLUMN result MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL
