-- Delete up to 1000 expired records (a fixed batch; the caller loops while batches are full).
-- No parameters. Returns affectedRows.
DELETE FROM {{table}} WHERE expires_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) LIMIT 1000
