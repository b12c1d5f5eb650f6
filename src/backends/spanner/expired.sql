-- Find one batch of expired records for purgeExpired(), inside a read-write transaction (the
-- rows stay locked until the deletes commit).
-- @batch the batch size (INT64).
-- Returns up to @batch rows: now (epoch ms), key, and the record's columns as read.sql names
-- them, but for fingerprint and result (a purge judges expires_at alone, and 500 results could
-- weigh a gigabyte). Rows of the transition table: purge.expired / purge.kept, decided per row by
-- purgeTransition (src/core/transitions.ts) before the delete.
SELECT UNIX_MILLIS(CURRENT_TIMESTAMP()) AS now, key, state, fencing_id, lease_expires_at,
  UNIX_MILLIS(expires_at) AS expires_at, token
FROM {{table}}
WHERE expires_at <= CURRENT_TIMESTAMP()
LIMIT @batch
