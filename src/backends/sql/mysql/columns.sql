-- Which of the columns upgrade.sql adds the table already has (SHOW COLUMNS reads
-- information_schema, resolving {{table}} as every statement does); ensureSchema() runs
-- upgrade.sql only when one is missing. No parameters. Returns a row (Field, …) per column
-- found: none, one or both of fingerprint and result.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: a schema check.
SHOW COLUMNS FROM {{table}} WHERE Field IN ('fingerprint', 'result')
