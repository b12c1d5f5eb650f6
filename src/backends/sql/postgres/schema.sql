-- PostgreSQL DDL for SqlLock. {{table}} is the validated (optionally schema-qualified) table,
-- {{index}} the index name. Times are epoch milliseconds in the server's clock.
-- No parameters, no result.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: the record every row reads and writes (key, state, fencing_id, lease_expires_at,
--   expires_at, token; fingerprint, the winning claim's, and result, the one complete stored:
--   both null when none). A table made by 0.1 lacks the last two: upgrade.sql adds them.
CREATE TABLE IF NOT EXISTS {{table}} (
  "key" text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('claimed', 'done')),
  fencing_id bigint NOT NULL,
  lease_expires_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  token text NOT NULL,
  fingerprint text,
  result text
);
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expires_at);
