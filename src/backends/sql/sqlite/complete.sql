-- Complete a claim: claimed → done (expires_at = now + ttl) with its result, in this one
-- statement; a done row with the same fence stays as it is (its result too). No lease guard.
-- @key key, @fence fencing id, @ttl ttl ms, @result the encoded result (null when none).
-- Read changes: 1 when the fence matched a live record, 0 when fenced out.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   complete.claimed (done with @result, true), complete.retried (true, unchanged),
--   complete.fenced (false). The fingerprint stays as the claim wrote it.
UPDATE {{table}} SET
  expires_at = CASE WHEN state = 'claimed' THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + @ttl ELSE expires_at END,
  result = CASE WHEN state = 'claimed' THEN @result ELSE result END,
  state = 'done'
WHERE "key" = @key AND fencing_id = @fence AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
