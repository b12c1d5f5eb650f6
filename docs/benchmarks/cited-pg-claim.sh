#!/usr/bin/env bash
# docs/benchmarks/cited.md: the PostgreSQL claim statements alone, on a duplicate, with pgbench.
# Not run by npm run bench; the run never rewrites this file or cited.md.
# Run from the repository root; needs psql and pgbench, a PostgreSQL at 127.0.0.1:5432 (user postgres).
set -euo pipefail
db=idem_cited_$$
dir=$(mktemp -d)
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db"
trap 'psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; rm -rf "$dir"' EXIT
sed -e 's/{{table}}/idempotency_records/g' -e 's/{{index}}/idempotency_records_expires_at/g' \
  src/backends/sql/postgres/schema.sql | psql -h 127.0.0.1 -U postgres -q -d "$db"
psql -h 127.0.0.1 -U postgres -q -d "$db" -c "INSERT INTO idempotency_records
  SELECT 'dup:' || g, 'done', 1, 0, 9e15::bigint, 'seed' FROM generate_series(0, 999) g"
psql -h 127.0.0.1 -U postgres -q -d "$db" -c "VACUUM ANALYZE idempotency_records"
# SqlLock's claim, as shipped; the parameters become pgbench variables.
sed -e 's/{{table}}/idempotency_records/g' -e 's/\$1/:key/g' -e 's/\$2/:lease/g' \
  -e 's/\$3/:ttl/g' -e 's/\$4/:token/g' src/backends/sql/postgres/claim.sql | grep -v '^--' >"$dir/ours.sql"
# The floor's claim since this commit (bench/backends/sql.ts PG_SQL.readOrInsert).
cat >"$dir/floor.sql" <<'SQL'
WITH found AS (
  SELECT state, fencing_id, lease_expires_at, token FROM idempotency_records WHERE "key" = :key::text
), inserted AS (
  INSERT INTO idempotency_records ("key", state, fencing_id, lease_expires_at, expires_at, token)
  SELECT :key::text, 'claimed', 1, :lease::bigint, :ttl::bigint, :token::text
  WHERE NOT EXISTS (SELECT 1 FROM found)
  ON CONFLICT ("key") DO NOTHING
  RETURNING state, fencing_id, lease_expires_at, token
)
SELECT state, false AS inserted FROM found UNION ALL SELECT state, true AS inserted FROM inserted
SQL
# The floor's claim before it (PG_SQL.insert): no read, no row returned.
cat >"$dir/floor-before.sql" <<'SQL'
INSERT INTO idempotency_records ("key", state, fencing_id, lease_expires_at, expires_at, token)
VALUES (:key, 'claimed', 1, :lease, :ttl, :token) ON CONFLICT ("key") DO NOTHING
SQL
for pass in 1 2; do
  for script in ours floor floor-before; do
    printf '%s pass %s: ' "$script" "$pass"
    pgbench -h 127.0.0.1 -U postgres -n -M prepared -c 1 -T 10 -f "$dir/$script.sql" \
      -D key=dup:1 -D lease=3600000 -D ttl=86400000 -D token=t "$db" 2>&1 |
      grep -E '^(latency average|tps)' | tr '\n' ' '
    echo
  done
done
