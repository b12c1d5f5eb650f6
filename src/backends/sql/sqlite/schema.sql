-- SQLite DDL for SqlLock. {{table}} is the validated table, {{index}} the index name.
-- TEXT keys compare with the BINARY collation: byte-exact. Times are epoch milliseconds.
-- No parameters, no result.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: the record every row reads and writes (key, state, fencing_id, lease_expires_at,
--   expires_at, token; fingerprint, the winning claim's, and result, the one complete stored:
--   both null when none). A table made by 0.1 lacks the last two: upgrade.sql adds them.
CREATE TABLE IF NOT EXISTS {{table}} (
  "key" TEXT PRIMARY KEY NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('claimed', 'done')),
  fencing_id INTEGER NOT NULL,
  lease_expires_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  token TEXT NOT NULL,
  fingerprint TEXT,
  result TEXT
);
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expires_at);
