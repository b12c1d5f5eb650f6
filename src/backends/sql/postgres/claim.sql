-- Claim a key in one statement.
-- $1 key (text), $2 lease ms (bigint), $3 ttl ms (bigint), $4 this claim's random token (text),
-- $5 this claim's fingerprint (text; null when it gave none).
-- Returns one row: state, fencing_id, lease_expires_at, token, fingerprint, result. The claim
-- was won iff token = $4; otherwise fingerprint and result are the stored ones (null: none).
-- Rows of the transition table implemented (docs/state-machine.md; src/core/transitions.ts):
--   claim.absent (won, fence = the server's clock in epoch µs, fingerprint $5, no result),
--   claim.held (answers the holder's fingerprint), claim.lapsed (won, fence + 1),
--   claim.done (answers the fingerprint and result), claim.expired (won, fence + 1); every
--   win writes fingerprint = $5 (null clears an earlier one) and clears result. claim.own
--   needs no statement: no claim is retried after a landed write, and the token in the
--   returned row tells who won.
-- A live record (done and unexpired, or claimed with its lease running) in the statement's
-- snapshot answers done/held by itself: the INSERT then gets no row, so a duplicate or a
-- contended claim writes nothing, takes no row lock and commits without a WAL flush. (Such a
-- record can only have moved on to done, renewed or released since the snapshot, so the
-- answer is that of a claim an instant earlier.) Otherwise the upsert runs, and its outcome
-- is decided inside DO UPDATE, which sees the latest committed row (not the snapshot), so a
-- lost race still answers done/held in this round trip. DO UPDATE always fires (rewriting
-- a held/done row unchanged) so RETURNING always has a row.
-- A new record's fence is the server's clock in µs (bigint; about 1.8e15, exact in a JS
-- number): above every fence an earlier, deleted record of the key reached, since each claim
-- or release adds only 1 and a record lives at least its ttl, unless the server's clock steps
-- back by more than the ttl.
WITH n AS (
  SELECT (extract(epoch FROM t) * 1000)::bigint AS now,
    (extract(epoch FROM t) * 1000000)::bigint AS first_fence
  FROM (SELECT clock_timestamp() AS t) AS clock
), live AS (
  SELECT c.state, c.fencing_id, c.lease_expires_at, c.token, c.fingerprint, c.result
  FROM {{table}} AS c, n
  WHERE c."key" = $1::text
    AND (CASE WHEN c.state = 'done' THEN c.expires_at ELSE c.lease_expires_at END) > n.now
), claimed AS (
  INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token, fingerprint)
  SELECT $1::text, 'claimed', n.first_fence, n.now + $2::bigint, n.now + $2::bigint + $3::bigint, $4::text,
    $5::text
  FROM n WHERE NOT EXISTS (SELECT 1 FROM live)
  ON CONFLICT ("key") DO UPDATE SET
    fencing_id = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN r.fencing_id + 1 ELSE r.fencing_id END,
    state = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN 'claimed' ELSE r.state END,
    lease_expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN excluded.lease_expires_at ELSE r.lease_expires_at END,
    expires_at = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN excluded.expires_at ELSE r.expires_at END,
    token = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN excluded.token ELSE r.token END,
    fingerprint = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN excluded.fingerprint ELSE r.fingerprint END,
    result = CASE WHEN (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
        <= excluded.lease_expires_at - $2::bigint
      THEN NULL ELSE r.result END
  RETURNING r.state, r.fencing_id, r.lease_expires_at, r.token, r.fingerprint, r.result
)
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM live
UNION ALL
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM claimed
