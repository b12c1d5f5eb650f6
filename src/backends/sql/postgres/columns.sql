-- How many of the columns upgrade.sql adds the table still lacks, read from the catalog
-- without a lock on the table; ensureSchema() runs upgrade.sql only when some are missing.
-- No parameters ({{table}} resolves through the search_path, as every statement's does).
-- Returns one row: missing (0, 1 or 2).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: a schema check.
SELECT 2 - count(*) AS missing FROM pg_attribute
WHERE attrelid = '{{table}}'::regclass AND attname IN ('fingerprint', 'result')
  AND attnum > 0 AND NOT attisdropped
