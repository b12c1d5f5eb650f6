-- Read the record of one key under both of its ids, and Spanner's clock, inside a read-write
-- transaction, for a lock with recordIds "migrating" (a table moving from 0.1's plain ids to
-- spread ones): the read locks both rows (or their absence) until the commit.
-- @key the key's spread id (STRING): its home, where a record is written.
-- @plain the key's plain id, the idempotency key itself (STRING), as 0.1 wrote it.
-- Returns one row of nulls (but now) when neither id holds a record, else one row per id that
-- does: now (epoch ms, CURRENT_TIMESTAMP()), id (the row's key column), and the columns
-- read.sql returns. The row at @key is the record; one at @plain only when @key has none, and
-- it moves to @key (deleted at @plain) with the next write.
-- Rows of the transition table: none by itself; as read.sql, every call decides on the record
-- with the pure functions of src/core/transitions.ts.
SELECT UNIX_MILLIS(CURRENT_TIMESTAMP()) AS now, r.key AS id, r.state, r.fencing_id,
  r.lease_expires_at, UNIX_MILLIS(r.expires_at) AS expires_at, r.token, r.fingerprint, r.result
FROM (SELECT 1 AS one) AS o
LEFT JOIN {{table}} AS r ON r.key IN (@key, @plain)
