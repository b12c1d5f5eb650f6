-- PostgreSQL DDL for SqlLock. {{table}} is the validated (optionally schema-qualified) table,
-- {{index}} the index name. Times are epoch milliseconds in the server's clock.
CREATE TABLE IF NOT EXISTS {{table}} (
  "key" text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('claimed', 'done')),
  fencing_id bigint NOT NULL,
  lease_expires_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  token text NOT NULL
);
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expires_at);
