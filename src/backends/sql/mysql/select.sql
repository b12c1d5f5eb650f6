-- Read a record right after claim.sql (both autocommit; only on a race, see claim.sql). The
-- token tells whether this call won: only the winner's token is in the row, and only the
-- winner moves it on, so a row bearing it carries the winner's fence and lease.
-- ? key (bytes). Returns state, fencing_id, lease_expires_at, token, fingerprint, result (or
-- no row); the claim was won iff token is that claim's token.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   the claim rows (claim.absent, claim.held, claim.lapsed, claim.done, claim.expired), with
--   claim.sql: that statement decides, this one reads the answer (won, held with the holder's
--   fingerprint, or done with the fingerprint and result).
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM {{table}} WHERE `key` = ?
