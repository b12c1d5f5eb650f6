-- Read a live record before claiming: done and unexpired, or claimed with its lease running.
-- @key key. Returns state, fencing_id, lease_expires_at, token, fingerprint, result (null when
-- the record has none), or no row when the key is absent or reclaimable (then claim.sql runs
-- and decides).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.held (answers the holder's fingerprint) and claim.done (answers the fingerprint and
--   result): a live record; claim.sql implements the other claim rows.
-- A plain read takes no write lock, so a duplicate or a contended claim neither waits for
-- the file's one writer nor writes (and syncs) a WAL frame. The record can only have moved
-- on to done, renewed or released since this read, so the answer is that of a claim an
-- instant earlier; a win is only ever decided by claim.sql.
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM {{table}}
WHERE "key" = @key
  AND (CASE WHEN state = 'done' THEN expires_at ELSE lease_expires_at END)
    > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
