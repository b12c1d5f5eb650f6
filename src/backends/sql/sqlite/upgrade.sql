-- Upgrade a SQLite table made by gcp-pubsub-idempotency 0.1: add the nullable columns
-- fingerprint and result (once(), step(), fingerprints). {{table}} is the validated table.
-- No parameters, no result. SQLite has no ADD COLUMN IF NOT EXISTS: running it again fails
-- with "duplicate column name". Each ALTER only edits the schema (no row is rewritten).
-- ensureSchema() runs it inside BEGIN IMMEDIATE, when columns.sql finds a column missing.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: records written before it read as records without a fingerprint or result.
ALTER TABLE {{table}} ADD COLUMN fingerprint TEXT;
ALTER TABLE {{table}} ADD COLUMN result TEXT;
