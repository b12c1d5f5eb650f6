-- Renew a live claim: lease_expires_at = now + lease, expires_at = that + ttl.
-- ? lease ms, ? lease ms, ? ttl ms, ? key (bytes), ? fencing id. Returns affectedRows: 1
-- renewed; 0 fenced out, done, or renewed within the same millisecond (check.sql tells).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   renew.claimed (true), renew.fenced (false; a done record too). The fingerprint stays.
UPDATE {{table}} SET
  lease_expires_at = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ?,
  expires_at = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000) + ? + ?
WHERE `key` = ? AND fencing_id = ? AND state = 'claimed'
  AND expires_at > (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)
