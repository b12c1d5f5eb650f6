-- Delete up to $1 (bigint) records whose expires_at has passed; the caller loops until a
-- batch comes back short. SKIP LOCKED keeps a purge from queueing behind live claims.
-- Returns no rows (read the row count).
DELETE FROM {{table}} WHERE "key" IN (
  SELECT "key" FROM {{table}}
  WHERE expires_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
  LIMIT $1::bigint
  FOR UPDATE SKIP LOCKED
)
