-- Claim an absent key: insert the record unless one exists; runs after peek.sql found none.
-- ? key (bytes), ? fence (peek's now_us), ? lease_expires_at (peek's now + lease),
-- ? expires_at (that + ttl), ? this claim's random token, ? its fingerprint (null when none).
-- Returns affectedRows: 1 won with exactly these values (no result); 0 a record appeared
-- since the read (claim.sql then decides).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.absent (won, fence = the server's clock in epoch µs at the read, the fingerprint
--   given, no result). The fence is above
--   every fence an earlier, deleted record of the key reached, since each claim or release adds
--   only 1 and a record lives at least its ttl, unless the server's clock steps back by more
--   than the ttl. IGNORE turns only the duplicate key into "no row": every value is ours.
INSERT IGNORE INTO {{table}} (`key`, state, fencing_id, lease_expires_at, expires_at, token, fingerprint)
VALUES (?, 'claimed', ?, ?, ?, ?, ?)
