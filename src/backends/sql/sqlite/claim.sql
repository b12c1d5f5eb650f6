-- Claim a key in one statement (an upsert holds the write lock for its whole run); runs
-- only when peek.sql found no live record.
-- @key key, @lease lease ms, @ttl ttl ms, @token this claim's random token, @fingerprint its
-- fingerprint (null when none).
-- Returns one row: state, fencing_id, lease_expires_at, token, fingerprint, result; won iff
-- token = @token, otherwise fingerprint and result are the stored ones (null: none).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.absent (won, fence = the clock in epoch ms × 1000), claim.held, claim.lapsed
--   (won, fence + 1), claim.done, claim.expired (won, fence + 1); every win writes
--   @fingerprint (null clears an earlier one) and clears result. claim.own needs no
--   statement: no claim is retried after a landed write, and the token in the returned row
--   tells who won.
-- DO UPDATE always fires so RETURNING always has the row; SET reads the old values.
-- SQLite's clock ('now': this process's, as for every lease here) reads whole ms, so a new
-- record's fence is that time × 1000: above every fence an earlier, deleted record of the key
-- reached, unless it took 1000 claims and releases per ms of its life (a record lives at
-- least its ttl), or the clock stepped back by more than the ttl.
INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token, fingerprint)
SELECT @key, 'claimed', n.now * 1000, n.now + @lease, n.now + @lease + @ttl, @token, @fingerprint
FROM (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS now) AS n
WHERE true
ON CONFLICT ("key") DO UPDATE SET
  fencing_id = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN r.fencing_id + 1 ELSE r.fencing_id END,
  state = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN 'claimed' ELSE r.state END,
  lease_expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.lease_expires_at ELSE r.lease_expires_at END,
  expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.expires_at ELSE r.expires_at END,
  token = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.token ELSE r.token END,
  fingerprint = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN excluded.fingerprint ELSE r.fingerprint END,
  result = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
      <= excluded.lease_expires_at - @lease
    THEN NULL ELSE r.result END
RETURNING state, fencing_id, lease_expires_at, token, fingerprint, result
