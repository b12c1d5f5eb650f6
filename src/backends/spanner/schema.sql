-- The table of SpannerLock's records (GoogleSQL dialect). {{table}} is the `table` option.
-- One row per key, under its id in the key column (recordIds: the key after a 4-hex-digit hash
-- and `~`, spread; or the key itself, plain); state 'claimed' | 'done'; fencing_id rises on every (re)claim and release;
-- lease_expires_at is epoch ms in Spanner's clock; expires_at is a TIMESTAMP, the earliest
-- moment the row may go; token is the random token of the claim that last won it.
-- fingerprint is what the winning claim gave (NULL: none), written by every win (claim.absent,
-- claim.lapsed, claim.expired) and answered with claim.done and claim.held; result is the
-- encoded result complete.claimed wrote with DONE (NULL: none), cleared by every win. Both are
-- STRING(MAX): a value of up to 2,621,440 characters (SpannerLock.supports.maxResultBytes).
-- A table made by 0.1 lacks both: ensureSchema() adds them, or apply upgrade.sql.
-- The row deletion policy lets Spanner reap rows past expires_at in the background (within
-- about three days, at no charge in compute beyond the deletes); until then every call treats
-- an expired row exactly as the transition table says (docs/state-machine.md), and
-- purgeExpired() deletes them at once.
CREATE TABLE IF NOT EXISTS {{table}} (
  key STRING(MAX) NOT NULL,
  state STRING(8) NOT NULL,
  fencing_id INT64 NOT NULL,
  lease_expires_at INT64 NOT NULL,
  expires_at TIMESTAMP NOT NULL,
  token STRING(64) NOT NULL,
  fingerprint STRING(MAX),
  result STRING(MAX),
) PRIMARY KEY (key),
  ROW DELETION POLICY (OLDER_THAN(expires_at, INTERVAL 0 DAY))
