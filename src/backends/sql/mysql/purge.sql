-- Delete up to 1000 expired records (a fixed batch; the caller loops while batches are full).
-- No parameters. Returns affectedRows.
DELETE FROM {{table}} WHERE expires_at <= (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) LIMIT 1000
