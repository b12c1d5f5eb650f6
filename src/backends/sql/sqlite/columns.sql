-- How many of the columns upgrade.sql adds the table still lacks; ensureSchema() runs
-- upgrade.sql only when some are. {{name}} is the table's validated name, unquoted.
-- No parameters. Returns one row: missing (0, 1 or 2).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   none: a schema check.
SELECT 2 - count(*) AS missing FROM pragma_table_info('{{name}}')
WHERE name IN ('fingerprint', 'result')
