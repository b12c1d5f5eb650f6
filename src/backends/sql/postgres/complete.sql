-- Complete a claim: claimed → done (expires_at = now + ttl) with its result, in this one
-- statement; a done row with the same fence is a retried complete and stays as it is (its
-- result too). No lease guard.
-- $1 key (text), $2 fencing id (bigint), $3 ttl ms (bigint), $4 the encoded result (text;
-- null when none).
-- Returns one row (ok) when the fence matched a live record, none when fenced out.
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   complete.claimed (done with result $4, true), complete.retried (true, unchanged),
--   complete.fenced (false). The fingerprint stays as the claim wrote it.
UPDATE {{table}} AS r SET
  state = 'done',
  expires_at = CASE WHEN r.state = 'claimed' THEN n.now + $3::bigint ELSE r.expires_at END,
  result = CASE WHEN r.state = 'claimed' THEN $4::text ELSE r.result END
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
WHERE r."key" = $1::text AND r.fencing_id = $2::bigint AND r.expires_at > n.now
RETURNING 1 AS ok
