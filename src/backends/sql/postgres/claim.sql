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
-- answer is that of a claim an instant earlier.) Otherwise the upsert runs; its DO UPDATE
-- sees the latest committed row (not the snapshot) and rewrites it only when that row is
-- reclaimable. When it is not (a claim that lost a race to another claim or complete since
-- the snapshot) no row comes back and nothing was written: the caller runs the statement
-- again, and its new snapshot sees the live record (docs/state-machine.md, PostgreSQL).
-- The same happens when the row was deleted between the conflict and the update.
-- A new record's fence is the server's clock in µs (bigint; about 1.8e15, exact in a JS
-- number): above every fence an earlier, deleted record of the key reached, since each claim
-- or release adds only 1 and a record lives at least its ttl, unless the server's clock steps
-- back by more than the ttl.
-- The clock is read twice: by the liveness test in `live`, and (only when that found no live
-- record) once more for the record written, an instant later. A record not live at the first
-- read is not live at the second, so the DO UPDATE's test (by the second) agrees; should the
-- clock step back between them, it refuses, nothing is written and the caller reruns. One
-- shared read (a CTE joined by both) cost about 2 µs of server CPU more per claim.
-- date_part is double precision (µs exact below 2^53 µs, the year 2255); extract() would
-- compute in numeric.
WITH live AS (
  SELECT c.state, c.fencing_id, c.lease_expires_at, c.token, c.fingerprint, c.result
  FROM {{table}} AS c
  WHERE c."key" = $1::text
    AND (CASE WHEN c.state = 'done' THEN c.expires_at ELSE c.lease_expires_at END)
      > (date_part('epoch', clock_timestamp()) * 1000)::bigint
), claimed AS (
  INSERT INTO {{table}} AS r ("key", state, fencing_id, lease_expires_at, expires_at, token, fingerprint)
  SELECT $1::text, 'claimed', n.first_fence, n.now + $2::bigint, n.now + $2::bigint + $3::bigint, $4::text,
    $5::text
  FROM (
    -- One read of the clock for the record written: its fence and its times agree.
    SELECT (t * 1000)::bigint AS now, (t * 1000000)::bigint AS first_fence
    FROM (SELECT date_part('epoch', clock_timestamp()) AS t) AS clock
  ) AS n
  WHERE NOT EXISTS (SELECT 1 FROM live)
  ON CONFLICT ("key") DO UPDATE SET
    state = 'claimed',
    fencing_id = r.fencing_id + 1,
    lease_expires_at = excluded.lease_expires_at,
    expires_at = excluded.expires_at,
    token = excluded.token,
    fingerprint = excluded.fingerprint,
    result = NULL
  WHERE (CASE WHEN r.state = 'done' THEN r.expires_at ELSE r.lease_expires_at END)
    <= excluded.lease_expires_at - $2::bigint
  RETURNING r.state, r.fencing_id, r.lease_expires_at, r.token, r.fingerprint, r.result
)
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM live
UNION ALL
SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM claimed
