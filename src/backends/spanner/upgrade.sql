-- Upgrade a records table made by 0.1's schema.sql (GoogleSQL dialect): the two nullable
-- columns of results and fingerprints, as schema.sql now has them. {{table}} is the `table`
-- option. Two statements, one per column, each a no-op where the column exists already; adding
-- a nullable column backfills nothing and takes no lock, so it is safe beside running
-- instances of 0.1 (which never read nor write these columns). Existing rows read as records
-- without a fingerprint or a result. SpannerLock.ensureSchema() applies them with the CREATE;
-- SpannerLock.upgradeDdl gives them for your own migrations.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS fingerprint STRING(MAX);
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS result STRING(MAX);
