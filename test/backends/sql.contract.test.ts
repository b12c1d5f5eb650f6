// The exported contract suite on SqlLock: PostgreSQL, MariaDB (the mysql dialect) and SQLite.
// The SQL-specific cases are in sql.test.ts.
import { describeBackendContract } from "../../src/testing/vitest.js";
import { openSqlStores } from "./sql-stores.js";

const { targets } = await openSqlStores();

for (const target of targets) {
  describeBackendContract({
    name: `SqlLock ${target.dialect}`,
    create: async ({ ttlMs }) => (await target.make(ttlMs))[0]!,
    leaseMs: target.dialect === "sqlite" ? 100 : 150,
    concurrency: 64,
  });
}
