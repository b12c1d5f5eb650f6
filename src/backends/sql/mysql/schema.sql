-- MySQL/MariaDB DDL for SqlLock. {{table}} is the validated table, {{index}} the index name.
-- The key is VARBINARY so comparisons are byte-exact: no PAD SPACE, no case folding.
-- Times are epoch milliseconds in the server's clock. fingerprint and result are utf8mb4 text
-- whatever the table's default character set (MEDIUMTEXT: up to 2^24 - 1 bytes).
-- No parameters, no result.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: the record every row reads and writes (key, state, fencing_id, lease_expires_at,
--   expires_at, token; fingerprint, the winning claim's, and result, the one complete stored:
--   both null when none). A table made by 0.1 lacks the last two: upgrade.sql adds them.
CREATE TABLE IF NOT EXISTS {{table}} (
  `key` VARBINARY(1024) NOT NULL,
  state VARCHAR(16) NOT NULL,
  fencing_id BIGINT NOT NULL,
  lease_expires_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  token VARCHAR(64) NOT NULL,
  fingerprint TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  result MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  PRIMARY KEY (`key`),
  INDEX {{index}} (expires_at)
) ENGINE = InnoDB
